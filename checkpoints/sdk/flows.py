"""Operations that take several requests, written once for both clients.

A flow is a generator that yields `Call`s (and `Sleep`s) and receives their results, or has the call's
CairnError thrown into it; `Client` drives it with blocking I/O and `AsyncClient` with `await`, so the logic
of a save that resolves the head, retries on a moved head (checkpoints.sdk.endpoints.saves), or polls a job
(checkpoints.sdk.endpoints.medallions) exists in one place.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Generator
from typing import Any, TypeVar

from checkpoints.sdk.drive import Sleep
from checkpoints.sdk.models import Checkpoint
from checkpoints.sdk.transport import Call, ServerClock

T = TypeVar("T")

__all__ = ["ClientMemory", "Flow", "Sleep", "restore"]


Flow = Generator[Call[Any] | Sleep, Any, T]


class ClientMemory:
    """What a client remembers between calls: the heads it saw and the step index of checkpoints it saved
    or read. Only ever a shortcut: a stale head costs a 412 and a refresh, never a wrong parent."""

    def __init__(self, clock: ServerClock, capacity: int = 4096) -> None:
        self.clock = clock
        self._capacity = capacity
        self._heads: OrderedDict[tuple[str, str], Checkpoint] = OrderedDict()
        self._steps: OrderedDict[tuple[str, str, str], int] = OrderedDict()
        self._lock = threading.Lock()

    def head(self, thread_id: str, namespace: str) -> Checkpoint | None:
        with self._lock:
            return self._heads.get((thread_id, namespace))

    def forget_head(self, thread_id: str, namespace: str) -> None:
        with self._lock:
            self._heads.pop((thread_id, namespace), None)

    def saw(self, checkpoint: Checkpoint, *, is_head: bool = False) -> None:
        with self._lock:
            key = (checkpoint.thread_id, checkpoint.namespace, checkpoint.checkpoint_id)
            self._steps[key] = checkpoint.step_index
            self._steps.move_to_end(key)
            if is_head:
                self._heads[(checkpoint.thread_id, checkpoint.namespace)] = checkpoint
                self._heads.move_to_end((checkpoint.thread_id, checkpoint.namespace))
            for cache in (self._steps, self._heads):
                while len(cache) > self._capacity:
                    cache.popitem(last=False)

    def step_of(self, thread_id: str, namespace: str, checkpoint_id: str) -> int | None:
        with self._lock:
            return self._steps.get((thread_id, namespace, checkpoint_id))


def restore(call: Call[Checkpoint], memory: ClientMemory, *, is_head: bool = False) -> Flow[Checkpoint]:
    """A checkpoint read (already re-hashed by the call's parser) or made by the server (a handoff's child,
    `is_head`), remembered for later saves."""
    checkpoint: Checkpoint = yield call
    memory.saw(checkpoint, is_head=is_head)
    return checkpoint
