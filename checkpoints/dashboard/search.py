"""Workspace-wide search for the dashboard: messages by their text, checkpoints by agent, step name and
metadata. Message text uses the API's search (`checkpoints.services.search`: same semantics, same indexes);
the step-name filter has a trigram index on PostgreSQL (`checkpoint_step_name_trgm`), the agent filter the
`checkpoint_ws_agent` index and the metadata filter the `checkpoint_metadata_gin` index; the writer filter
walks `checkpoint_ws_timeline` (docs/storage.md, "Indexes"); the finding filter the `annotation_ws_verdict`
index."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, ClassVar

from django import forms
from django.db.models import F, QuerySet
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from checkpoints.dashboard.forms import DateRangeMixin, filter_by_fields
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Annotation, Checkpoint, Message, Workspace
from checkpoints.models.lookups import JsonContains
from checkpoints.services.search import MAX_QUERY_CHARS, messages_matching, parse_search_query

SNIPPET_CHARS = 240
# The verdict filter's choice for "any finding, whatever its verdict".
ANNOTATED = "annotated"


class SearchForm(DateRangeMixin):
    """One form for both kinds of hit; each kind uses the fields that apply to it (see `help_text`)."""

    KINDS: ClassVar[dict[str, str]] = {"messages": "Messages", "checkpoints": "Checkpoints"}

    q = forms.CharField(
        required=False,
        max_length=MAX_QUERY_CHARS,
        label="Words",
        help_text=(
            'Messages: every word, anywhere in the text ("quoted phrase" = one). '
            "Checkpoints: step name contains."
        ),
    )
    kind = forms.ChoiceField(required=False, choices=list(KINDS.items()), label="Search in")
    agent = forms.CharField(
        required=False, max_length=255, help_text="Checkpoints: agent id. Messages: the sender's name."
    )
    written_by = forms.CharField(
        required=False,
        max_length=160,
        label="Written by",
        help_text='Checkpoints: "key:<prefix>" (an API key) or "user:<username>".',
    )
    role = forms.ChoiceField(required=False, choices=[("", "Any role"), *Message.Role.choices])
    verdict = forms.ChoiceField(
        required=False,
        choices=[("", "Any"), *Annotation.Verdict.choices, (ANNOTATED, "Has a finding")],
        label="Finding",
        help_text="Checkpoints: with a finding of this verdict, or with any finding.",
    )
    thread = forms.CharField(required=False, max_length=128, label="Thread id")
    metadata = forms.CharField(
        required=False,
        max_length=1000,
        help_text='Checkpoints: key=value, or a JSON object such as {"source": "loop"}',
    )
    field_order = [
        "q",
        "kind",
        "agent",
        "written_by",
        "role",
        "verdict",
        "thread",
        "metadata",
        "date_from",
        "date_to",
    ]

    @property
    def chosen_kind(self) -> str:
        return (self.cleaned_data.get("kind") if self.is_valid() else None) or "messages"

    def clean_q(self) -> str:
        raw: str = self.cleaned_data.get("q") or ""
        try:
            parse_search_query(raw)
        except ValidationFailed as error:
            raise forms.ValidationError(error.message) from error
        return raw

    def clean_metadata(self) -> dict[str, Any] | None:
        """`key=value` (the value read as JSON when it is JSON, else as a string) or a JSON object."""
        raw = (self.cleaned_data.get("metadata") or "").strip()
        if not raw:
            return None
        if raw.startswith("{"):
            try:
                wanted = json.loads(raw)
            except ValueError as error:
                raise forms.ValidationError(f"Not valid JSON: {error}.") from error
            if not isinstance(wanted, dict):
                raise forms.ValidationError("Give a JSON object or key=value.")
        else:
            key, sep, value = raw.partition("=")
            if not sep or not key.strip():
                raise forms.ValidationError("Give key=value or a JSON object.")
            try:
                parsed: Any = json.loads(value)
            except ValueError:
                parsed = value.strip()
            wanted = {key.strip(): parsed}
        try:
            # The lookup's own check: no NUL, JSON values only (what PostgreSQL's jsonb can compare).
            JsonContains(F("metadata"), wanted).get_prep_lookup()
        except ValidationFailed as error:
            raise forms.ValidationError(error.message) from error
        return wanted

    def messages(self, workspace: Workspace) -> QuerySet[Message] | None:
        """The matching messages (order them newest first), or None when there are no words to look for:
        a search without words would list every message of the workspace."""
        data = self.cleaned_data
        if not parse_search_query(data.get("q") or ""):
            return None
        queryset = Message.objects.for_workspace(workspace).for_display().with_thread_id()
        queryset = messages_matching(queryset, data["q"])
        lookups = {"role": "role", "agent": "name", "thread": "thread__thread_id"}
        queryset = filter_by_fields(queryset, data, lookups)
        return queryset.filter(self.date_filter("created_at"))

    def checkpoints(self, workspace: Workspace) -> QuerySet[Checkpoint]:
        """The matching checkpoints, tombstones included (order them newest first). Without any filter this
        is the workspace's checkpoint list."""
        data = self.cleaned_data
        queryset = Checkpoint.objects.for_workspace(workspace).select_related("thread").without_payload()
        if data.get("q"):
            queryset = queryset.filter(step_name__icontains=data["q"].strip())
        queryset = filter_by_fields(queryset, data, {"agent": "agent_id", "written_by": "written_by"})
        if data.get("thread"):
            queryset = queryset.in_thread(workspace, data["thread"])
        if data.get("metadata") is not None:
            queryset = queryset.filter(metadata__json_contains=data["metadata"])
        if data.get("verdict"):
            verdict = None if data["verdict"] == ANNOTATED else data["verdict"]
            findings = Annotation.objects.for_workspace(workspace).checkpoint_pks(verdict)
            queryset = queryset.filter(pk__in=findings)
        return queryset.filter(self.date_filter("created_at"))


def message_text(message: Message) -> str:
    """What search looks at, as written: the content and the text of each content block."""
    parts = [message.content]
    if isinstance(message.content_blocks, list):
        parts += [
            block["text"]
            for block in message.content_blocks
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
    return "\n".join(part for part in parts if part)


def highlight(text: str, raw_query: str, width: int = SNIPPET_CHARS) -> SafeString:
    """An escaped excerpt of `text` around the first match, every match of a term wrapped in <mark>.

    Matching here ignores case like the search does; a term that only matches after full case folding
    (ß and ss) is found by the search but not marked.
    """
    text = unicodedata.normalize("NFKC", text)
    terms = sorted(parse_search_query(raw_query), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(term) for term in terms), re.IGNORECASE) if terms else None
    first = pattern.search(text) if pattern else None
    start = max(0, (first.start() if first else 0) - width // 3)
    excerpt = text[start : start + width]
    pieces: list[str] = ["…" if start else ""]
    position = 0
    for match in pattern.finditer(excerpt) if pattern else ():
        pieces.append(conditional_escape(excerpt[position : match.start()]))
        pieces.append(format_html("<mark>{}</mark>", match.group()))
        position = match.end()
    pieces.append(conditional_escape(excerpt[position:]))
    pieces.append("…" if start + width < len(text) else "")
    return mark_safe("".join(pieces))  # nosec B308 B703 # every piece is escaped above
