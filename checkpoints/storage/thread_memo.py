"""What this process remembers of the threads it last wrote into, so that the next write there can skip its
first statement (docs/architecture.md, "The hot path").

After a save outside a transaction, the process keeps the thread's row as the save left it and the
namespace's new head. The next save or pending write on that thread and namespace may decide from this memo
instead of reading (`checkpoint_save.save_context` says when it answers everything the write asks); the
write's one statement then stores only if the thread is still as remembered: the same state_version (every
write that may move a head bumps it), idle TTL and user, and, for a save, with the id still free. Otherwise
nothing is written and the write runs again from a read. A memo may lead to a write that its statement
checks, never to a refusal: a stale memo costs a round trip, never a wrong answer.

After a message append, the process keeps the thread's row as the append left it and its last message's
time; the next append there decides from it (`messages._append`) and its one statement stores only if the
thread still has that last_message_seq (every append moves it), idle TTL and user.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from cachetools import LRUCache

from checkpoints.models import Checkpoint, Thread
from checkpoints.parts import enabled

M = TypeVar("M", Thread, Checkpoint)

LIMIT = 4096  # threads remembered per process; the oldest is forgotten first

_Key = tuple[int, str, str]  # workspace pk, thread_id, namespace


@dataclass(frozen=True)
class Remembered:
    thread: Thread  # as the last save left it, without its JSON fields (take copies of it)
    head: Checkpoint  # that save's checkpoint, the namespace's head after it: what `is_readable` needs


# A memo holds no document: what a write decides from, small whatever the thread carries. The fields left
# out are deferred (Django loads a deferred field from the database if it is ever read).
_THREAD_FIELDS = [
    f.attname for f in Thread._meta.concrete_fields if f.attname not in {"tags", "metadata", "scope"}
]
_HEAD_FIELDS = ["id", "checkpoint_id", "step_index", "expires_at", "pinned", "expired_at"]


@dataclass(frozen=True)
class Appended:
    thread: Thread  # as the last append left it, without its JSON fields (take copies of it)
    last_message_at: datetime  # the time of the thread's last message then


# Bounded: the least recently used thread is forgotten first. cachetools' caches are not thread-safe.
_memo: LRUCache[_Key, Remembered] = LRUCache(maxsize=LIMIT)
_appended: LRUCache[tuple[int, str], Appended] = LRUCache(maxsize=LIMIT)  # by workspace pk and thread_id
_lock = threading.Lock()


def _part(instance: M, attnames: list[str]) -> M:
    """A loaded instance of the same model holding only these fields, the others deferred."""
    return type(instance).from_db(
        instance._state.db, attnames, [getattr(instance, name) for name in attnames]
    )


def recall(workspace_pk: int, thread_id: str, namespace: str) -> Remembered | None:
    if not enabled("thread_memo"):
        return None
    with _lock:
        return _memo.get((workspace_pk, thread_id, namespace))


def forget(workspace_pk: int, thread_id: str, namespace: str) -> None:
    """A write found the memo stale: the next one reads."""
    with _lock:
        _memo.pop((workspace_pk, thread_id, namespace), None)


def remember(checkpoint: Checkpoint) -> None:
    """Remember the thread of a checkpoint just saved (and committed), with it as the namespace's head."""
    thread = checkpoint.thread
    remembered = Remembered(_part(thread, _THREAD_FIELDS), _part(checkpoint, _HEAD_FIELDS))
    key = (checkpoint.workspace_id, thread.thread_id, checkpoint.namespace)
    with _lock:
        _memo[key] = remembered


def appended(thread: Thread, last_message_at: datetime) -> Appended:
    """What to remember of a thread an append just wrote (taken now: the thread object may change later)."""
    return Appended(_part(thread, _THREAD_FIELDS), last_message_at)


def remember_append(memo: Appended) -> None:
    """Remember an append's thread once it committed."""
    key = (memo.thread.workspace_id, memo.thread.thread_id)
    with _lock:
        _appended[key] = memo


def recall_append(workspace_pk: int, thread_id: str) -> Appended | None:
    if not enabled("thread_memo"):
        return None
    with _lock:
        return _appended.get((workspace_pk, thread_id))


def forget_append(workspace_pk: int, thread_id: str) -> None:
    """An append found the memo stale: the next one reads."""
    with _lock:
        _appended.pop((workspace_pk, thread_id), None)


def forget_all() -> None:
    """Drop everything remembered (tests)."""
    with _lock:
        _memo.clear()
        _appended.clear()
