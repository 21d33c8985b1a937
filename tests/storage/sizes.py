"""Threads whose state is stored packed, and the logical and stored bytes they should report, computed from
the stored rows themselves (whole stored texts, not the header reads the accounting uses)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checkpoints.models import Checkpoint, Message, PendingWrite, StoredValue, Thread, Workspace
from checkpoints.packing import digests, is_packed
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire
from checkpoints.services.messages import messages_append
from tests.factories import make_checkpoint, make_pending_write


def message(n: int) -> dict[str, Any]:
    """About 300 characters: a list of 40 of them is well over the packing threshold."""
    return {"role": "user" if n % 2 else "assistant", "content": f"message {n}: " + "word " * 60, "n": n}


def chat(turns: int) -> dict[str, Any]:
    return {"messages": [message(n) for n in range(turns)], "step": turns}


def build_packed_thread(workspace: Workspace, thread_id: str = "t") -> Thread:
    """A chat of 40 messages saved, then saved again with one more; a pending write, a message, and a
    tombstone (whose payload is gone, so it counts in neither size)."""
    make_checkpoint(workspace, thread_id, state=chat(40))
    head = make_checkpoint(workspace, thread_id, state=chat(41), context={"note": "é" * 10})
    make_pending_write(head, {"v": "é"})
    messages_append(workspace=workspace, thread_id=thread_id, messages=[{"role": "user", "content": "héllo"}])
    gone = make_checkpoint(workspace, thread_id, namespace="sub", state=chat(42))
    checkpoint_expire(checkpoint=gone, actor=Actor.system("test"))
    return Thread.objects.get(workspace=workspace, thread_id=thread_id)


def utf8(text: str | None) -> int:
    return 0 if text is None else len(text.encode("utf-8"))


@dataclass(frozen=True)
class Expected:
    """What a thread or workspace should report: state logical and stored, and the other kinds."""

    state_logical: int
    state_stored: int
    parts: int
    part_bytes: int
    other: int  # pending writes and messages: the same in both sizes

    @property
    def logical(self) -> int:
        return self.state_logical + self.other

    @property
    def stored(self) -> int:
        return self.state_stored + self.other


def _state(rows: list[tuple[int, str | None, str | None, str | None]], part_bodies: list[str]) -> Expected:
    row_bytes = sum(utf8(state) + utf8(context) + utf8(metadata) for _, state, context, metadata in rows)
    part_bytes = sum(utf8(body) for body in part_bodies)
    return Expected(
        state_logical=sum(size for size, *_ in rows),
        state_stored=row_bytes + part_bytes,
        parts=len(part_bodies),
        part_bytes=part_bytes,
        other=0,
    )


def _live_rows(**where: Any) -> list[tuple[int, str | None, str | None, str | None]]:
    rows = Checkpoint.objects.filter(expired_at__isnull=True, **where)
    return list(rows.values_list("size_bytes", "state", "context", "metadata"))


def expected_for_thread(thread: Thread) -> Expected:
    """Parts named by the thread's live rows, each once; its pending writes and messages as stored."""
    rows = _live_rows(thread=thread)
    named = digests(text for _, state, context, _ in rows for text in (state, context))
    bodies = [body for digest, body in _parts(thread.workspace_id) if bytes(digest) in named]
    assert len(bodies) == len(named), "every named part is stored"
    values = PendingWrite.objects.filter(thread=thread).values_list("value", flat=True)
    messages = Message.objects.filter(thread=thread).values_list("size_bytes", flat=True)
    state = _state(rows, bodies)
    return Expected(
        state_logical=state.state_logical,
        state_stored=state.state_stored,
        parts=state.parts,
        part_bytes=state.part_bytes,
        other=sum(utf8(value) for value in values) + sum(messages),
    )


def expected_for_workspace(workspace: Workspace) -> Expected:
    """Every live row of the workspace and every part it stores (pending writes and messages left out)."""
    return _state(_live_rows(workspace=workspace), [body for _, body in _parts(workspace.pk)])


def _parts(workspace_id: int) -> list[tuple[bytes, str]]:
    rows = StoredValue.objects.filter(workspace_id=workspace_id).values_list("digest", "body")
    return [(bytes(digest), body) for digest, body in rows]


def packed_rows(thread: Thread) -> int:
    """How many of the thread's live rows hold a packed state."""
    return sum(is_packed(state) for _, state, _, _ in _live_rows(thread=thread))
