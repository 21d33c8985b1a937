"""The fork form: the new thread's id and name, the state to start from (JSON, editable) and the messages
to carry over. State is checked with the API's own JSON rules and encoding, so errors show next to it."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.db.models.functions import Left

from checkpoints.api.parsers import parse_json
from checkpoints.dashboard.action_forms import client_id_validator
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Checkpoint, Message
from checkpoints.services.checkpoint_records import UNSET, encode_document

# States larger than this are not put in the form to edit (the browser would struggle): they are copied.
EDITABLE_STATE_BYTES = 1_000_000
# More messages than this up to the checkpoint: "all" or "none" only, no list to tick.
PICKABLE_MESSAGES = 300
MESSAGE_PREVIEW_CHARS = 90


def message_choices(checkpoint: Checkpoint) -> list[tuple[str, str]] | None:
    """(message_id, label) of the messages a fork from `checkpoint` would carry, oldest first; None when
    there are too many to pick from."""
    rows = list(
        Message.objects.filter(thread_id=checkpoint.thread_id, seq__lte=checkpoint.message_seq)
        .order_by("seq")
        .annotate(preview=Left("content", MESSAGE_PREVIEW_CHARS))
        .values_list("message_id", "seq", "role", "preview")[: PICKABLE_MESSAGES + 1]
    )
    if len(rows) > PICKABLE_MESSAGES:
        return None
    return [(message_id, f"#{seq} {role}: {preview}") for message_id, seq, role, preview in rows]


def editable_state(checkpoint: Checkpoint) -> str:
    """The checkpoint's state as indented JSON for the text area, or "" when it is too large to edit."""
    if checkpoint.state is None or len(checkpoint.state) > EDITABLE_STATE_BYTES:
        return ""
    return json.dumps(json.loads(checkpoint.state), ensure_ascii=False, indent=2)


class ForkForm(forms.Form):
    thread_id = forms.CharField(
        required=False,
        max_length=128,
        validators=[client_id_validator],
        label="New thread id",
        help_text="Leave empty for a generated id.",
    )
    name = forms.CharField(required=False, max_length=255, label="Name of the new thread")
    state = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "class": "code"}),
        label="State of the new thread's head (JSON)",
        help_text="Edit it to fork with changes. Empty: the checkpoint's state, unchanged.",
    )
    reason = forms.CharField(
        required=False,
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Reason for the change",
        help_text="Recorded in the audit log with the paths of the values you edited.",
    )
    carry = forms.ChoiceField(
        required=False,
        widget=forms.RadioSelect,
        label="Messages to carry over",
        choices=[("all", "All of them"), ("chosen", "Only the ones ticked below"), ("none", "None")],
    )
    messages = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Messages up to this checkpoint"
    )

    def __init__(self, *args: Any, checkpoint: Checkpoint, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checkpoint = checkpoint
        choices = message_choices(checkpoint)
        messages: Any = self.fields["messages"]
        carry: Any = self.fields["carry"]
        if choices is None:
            del self.fields["messages"]
            carry.choices = [c for c in carry.choices if c[0] != "chosen"]
            carry.help_text = f"More than {PICKABLE_MESSAGES} messages: carry all of them or none."
        else:
            messages.choices = choices
            self.initial.setdefault("messages", [message_id for message_id, _ in choices])  # all ticked
            carry.choices = [
                (value, f"All {len(choices)}" if value == "all" else label) for value, label in carry.choices
            ]
        if checkpoint.state is not None and len(checkpoint.state) > EDITABLE_STATE_BYTES:
            self.fields["state"].help_text = "Too large to edit here: the state is copied unchanged."
            self.fields["state"].disabled = True

    def clean_state(self) -> Any:
        """The edited state, or UNSET when it is empty or the same as the checkpoint's."""
        text = self.cleaned_data.get("state") or ""
        if not text.strip():
            return UNSET
        try:
            value = parse_json(text)
            encoded = encode_document("state", value)
        except ValidationFailed as error:
            raise forms.ValidationError(error.message) from error
        return UNSET if encoded == self.checkpoint.state else value

    def service_arguments(self) -> dict[str, Any]:
        """Keyword arguments of thread_fork: only what differs from a plain fork."""
        data = self.cleaned_data
        arguments: dict[str, Any] = {}
        for name in ("thread_id", "name"):
            if data.get(name):
                arguments[name] = data[name]
        if data.get("state", UNSET) is not UNSET:
            arguments["state"] = data["state"]
        if data.get("reason"):
            arguments["reason"] = data["reason"]
        carry = data.get("carry") or "all"
        if carry == "none":
            arguments["message_ids"] = []
        elif carry == "chosen":
            arguments["message_ids"] = data.get("messages") or []
        return arguments
