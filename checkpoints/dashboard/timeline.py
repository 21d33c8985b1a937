"""A thread's run timeline: its messages and checkpoints in one stream, in the order they happened.

A checkpoint records `message_seq`, the last message of the thread when it was saved, so message `seq`
comes before a checkpoint exactly when `seq <= message_seq`. The timeline merges two index-ordered streams,
messages by `seq` (the `message_unique_seq` index) and checkpoints by creation (`checkpoint_thread_timeline`),
with that rule. A page's cursor is the pair (last message seq shown, last checkpoint shown): each side
resumes with one index seek, so any page of a long thread costs what the first one costs, and every item
appears exactly once whichever way the pages are walked.

A checkpoint in a sub-namespace (a subgraph) is attached to the step that spawned it: the newest checkpoint
of the parent namespace created before it (LangGraph runs a subgraph inside one step of its parent, so its
checkpoints follow that step's checkpoint).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpRequest

from checkpoints.dashboard.steps import StepSummary, step_summaries
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Annotation, Checkpoint, Message, Thread

PAGE_SIZE = 50
_BIGINT_MAX = 2**63 - 1
# LangGraph separates nested subgraph namespaces with "|" ("outer:task-1|inner:task-2").
NAMESPACE_SEPARATOR = "|"
MAX_DEPTH_SHOWN = 4


def parent_namespace(namespace: str) -> str:
    """The namespace of the graph that spawned `namespace` ("" for a top-level subgraph)."""
    return namespace.rpartition(NAMESPACE_SEPARATOR)[0]


@dataclass(frozen=True)
class Position:
    """Where a page starts or ends: the last message seq and checkpoint primary key before it."""

    seq: int
    pk: int

    @classmethod
    def end(cls) -> Position:
        """After everything: walking backwards from here shows the latest page."""
        return cls(_BIGINT_MAX, _BIGINT_MAX)

    def encode(self, backwards: bool) -> str:
        text = f"{'b' if backwards else 'a'}:{self.seq}:{self.pk}"
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @staticmethod
    def decode(cursor: str) -> tuple[Position, bool]:
        try:
            text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
            direction, seq, pk = text.split(":")
            if direction not in ("a", "b"):
                raise ValueError(direction)
            position = Position(int(seq), int(pk))
            if not (0 <= position.seq <= _BIGINT_MAX and 0 <= position.pk <= _BIGINT_MAX):
                raise ValueError(text)
            return position, direction == "b"
        except (ValueError, binascii.Error, UnicodeDecodeError) as error:
            raise ValidationFailed("cursor is not a timeline position.") from error


@dataclass
class Entry:
    """One item of the timeline: a message (with the checkpoint that followed it) or a checkpoint (with the
    step that spawned its namespace)."""

    message: Message | None = None
    checkpoint: Checkpoint | None = None
    followed_by: Checkpoint | None = None
    spawned_by: Checkpoint | None = None
    step: StepSummary | None = None
    # The checkpoint's findings, newest first (filled in by the timeline view, for the badge).
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def depth(self) -> int:
        """How deep the checkpoint's subgraph is nested (0: the root graph), capped for the indentation."""
        if self.checkpoint is None or not self.checkpoint.namespace:
            return 0
        return min(self.checkpoint.namespace.count(NAMESPACE_SEPARATOR) + 1, MAX_DEPTH_SHOWN)

    @property
    def anchor_id(self) -> str:
        """The entry's HTML id, which links to its place in the timeline."""
        return (
            f"m-{self.message.seq}"
            if self.message is not None
            else f"c-{self.checkpoint.pk if self.checkpoint else 0}"
        )


@dataclass
class TimelinePage:
    entries: list[Entry]
    next: str | None = None
    previous: str | None = None
    namespaces: list[str] = field(default_factory=list)


def _comes_first(message: Message, checkpoint: Checkpoint, backwards: bool) -> bool:
    """Whether `message` is the next item to show before `checkpoint` in the walking direction."""
    if backwards:
        return message.seq > checkpoint.message_seq
    return message.seq <= checkpoint.message_seq


def _merge(
    messages: list[Message], checkpoints: list[Checkpoint], limit: int, backwards: bool
) -> list[Entry]:
    entries: list[Entry] = []
    m = c = 0
    while len(entries) < limit and (m < len(messages) or c < len(checkpoints)):
        take_message = c == len(checkpoints) or (
            m < len(messages) and _comes_first(messages[m], checkpoints[c], backwards)
        )
        if take_message:
            entries.append(Entry(message=messages[m]))
            m += 1
        else:
            entries.append(Entry(checkpoint=checkpoints[c]))
            c += 1
    return entries[::-1] if backwards else entries


def _link(request: HttpRequest, cursor: str) -> str:
    """This page's URL at another position (an anchor parameter would override the cursor: dropped)."""
    query = request.GET.copy()
    for key in ("cursor", "message", "checkpoint", "ns"):
        query.pop(key, None)
    query["cursor"] = cursor
    return f"{request.path}?{query.urlencode()}"


def start_at_message(thread: Thread, seq: int) -> Position:
    """The position just before message `seq`: the checkpoints saved before it are behind it.

    Walks the thread's checkpoints newest first (`checkpoint_thread_timeline`) to the last one saved before
    the message: bounded by the thread, never the table.
    """
    before = (
        Checkpoint.objects.filter(thread=thread, message_seq__lt=seq)
        .order_by("-id")
        .values_list("pk", flat=True)
        .first()
    )
    return Position(seq - 1, before or 0)


def start_at_checkpoint(checkpoint: Checkpoint) -> Position:
    """The position just before `checkpoint`: the messages it recorded and the checkpoints before it."""
    return Position(checkpoint.message_seq, checkpoint.pk - 1)


def _attach_spawners(thread: Thread, entries: list[Entry]) -> None:
    """Set `spawned_by` on each sub-namespace checkpoint, in one query for the whole page."""
    subgraph = [e.checkpoint for e in entries if e.checkpoint is not None and e.checkpoint.namespace]
    if not subgraph:
        return
    firsts: dict[str, Checkpoint] = {}
    for checkpoint in subgraph:
        firsts.setdefault(checkpoint.namespace, checkpoint)
    nearest = [
        Checkpoint.objects.filter(thread=thread, namespace=parent_namespace(ns), pk__lt=first.pk)
        .order_by("-id")
        .values("pk")[:1]
        for ns, first in firsts.items()
    ]
    # Each namespace's spawner is the newest parent-namespace row before its first row on the page, so it is
    # the newest of the candidates below that bound.
    candidates = list(
        Checkpoint.objects.filter(thread=thread)
        .filter(reduce(or_, (Q(pk__in=subquery) for subquery in nearest)))
        .without_payload()
    )
    for entry in entries:
        row = entry.checkpoint
        if row is None or not row.namespace:
            continue
        bound = firsts[row.namespace].pk
        parent = parent_namespace(row.namespace)
        found = [c for c in candidates if c.namespace == parent and c.pk < bound]
        entry.spawned_by = max(found, key=lambda c: c.pk) if found else None


def _attach_steps(entries: list[Entry]) -> None:
    """Set `step` (what ran, docs/dashboard.md) on each checkpoint, in a fixed number of queries per page."""
    summaries = step_summaries([e.checkpoint for e in entries if e.checkpoint is not None])
    for entry in entries:
        if entry.checkpoint is not None:
            entry.step = summaries[entry.checkpoint.pk]


def _attach_followers(entries: list[Entry], next_checkpoint: Checkpoint | None) -> None:
    """Set `followed_by` on each message: the next checkpoint in the stream (None: not saved yet)."""
    following = next_checkpoint
    for entry in reversed(entries):
        if entry.checkpoint is not None:
            following = entry.checkpoint
        else:
            entry.followed_by = following


def timeline_page(
    request: HttpRequest, thread: Thread, start: Position | None = None, limit: int = PAGE_SIZE
) -> TimelinePage:
    """One page of the thread's timeline from `?cursor=` (or `start`, or the beginning)."""
    cursor = request.GET.get("cursor")
    position, backwards = Position.decode(cursor) if cursor else (start or Position(0, 0), False)
    messages: QuerySet[Message] = Message.objects.filter(thread=thread).for_display()
    checkpoints: QuerySet[Any] = Checkpoint.objects.filter(thread=thread).without_payload()
    if backwards:
        messages = messages.filter(seq__lte=position.seq).order_by("-seq")
        checkpoints = checkpoints.filter(pk__lte=position.pk).order_by("-id")
    else:
        messages = messages.filter(seq__gt=position.seq).order_by("seq")
        checkpoints = checkpoints.filter(pk__gt=position.pk).order_by("id")
    fetched_messages = list(messages[: limit + 1])
    fetched_checkpoints = list(checkpoints[: limit + 1])
    entries = _merge(fetched_messages, fetched_checkpoints, limit, backwards)
    more = len(fetched_messages) + len(fetched_checkpoints) > len(entries)
    before = _position_before(entries, position) if backwards else position
    after = position if backwards else _position_after(entries, position)
    page = TimelinePage(entries=entries)
    if backwards:
        has_before, has_after = more, position != Position.end()
        # The checkpoint that follows the page's last messages is the first one after the cursor.
        trailing_message = bool(entries) and entries[-1].message is not None
        following = (
            Checkpoint.objects.filter(thread=thread, pk__gt=position.pk)
            .without_payload()
            .order_by("id")
            .first()
            if trailing_message
            else None
        )
    else:
        has_before, has_after = _anything_before(thread, position), more
        shown_checkpoints = sum(1 for e in entries if e.checkpoint is not None)
        unshown = fetched_checkpoints[shown_checkpoints:]
        following = unshown[0] if unshown else None
    if has_after and entries:
        page.next = _link(request, after.encode(backwards=False))
    if has_before:
        page.previous = _link(request, before.encode(backwards=True))
    _attach_followers(entries, following)
    _attach_spawners(thread, entries)
    _attach_steps(entries)
    page.namespaces = sorted({e.checkpoint.namespace for e in entries if e.checkpoint is not None})
    return page


def _anything_before(thread: Thread, position: Position) -> bool:
    """Whether the stream holds anything before `position` (a message seq is never below 1)."""
    if position.seq > 0:
        return True
    return position.pk > 0 and Checkpoint.objects.filter(thread=thread, pk__lte=position.pk).exists()


def _position_before(entries: list[Entry], position: Position) -> Position:
    """The position just before a backwards page's first entry."""
    seqs = [e.message.seq for e in entries if e.message is not None]
    pks = [e.checkpoint.pk for e in entries if e.checkpoint is not None]
    return Position(min(seqs) - 1 if seqs else position.seq, min(pks) - 1 if pks else position.pk)


def _position_after(entries: list[Entry], before: Position) -> Position:
    """The position just after a forward page's last entry."""
    seqs = [e.message.seq for e in entries if e.message is not None]
    pks = [e.checkpoint.pk for e in entries if e.checkpoint is not None]
    return Position(max(seqs, default=before.seq), max(pks, default=before.pk))


def neighbours(checkpoint: Checkpoint) -> tuple[Checkpoint | None, Checkpoint | None]:
    """The previous and next step: the checkpoints of the same thread and namespace saved just before and
    just after it (tombstones included), each one seek on `checkpoint_thread_timeline`."""
    same = Checkpoint.objects.filter(thread_id=checkpoint.thread_id, namespace=checkpoint.namespace)
    same = same.without_payload()
    previous = same.filter(pk__lt=checkpoint.pk).order_by("-id").first()
    following = same.filter(pk__gt=checkpoint.pk).order_by("id").first()
    return previous, following
