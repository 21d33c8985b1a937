"""Operations that take several requests, written once for both clients.

A flow is a generator that yields `Call`s (and `Sleep`s) and receives their results, or has the call's
CairnError thrown into it; `Client` drives it with blocking I/O and `AsyncClient` with `await`, so the logic
of a save that resolves the head, retries on a moved head, or polls a job exists in one place.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from checkpoints.ids import new_id
from checkpoints.sdk.calls import checkpoints as cp_calls
from checkpoints.sdk.calls import medallions as medallion_calls
from checkpoints.sdk.calls.base import UNSET, Unset
from checkpoints.sdk.calls.checkpoints import CheckpointDraft
from checkpoints.sdk.errors import Conflict, JobFailed, NotFound, PreconditionFailed, ValidationError
from checkpoints.sdk.models import Checkpoint, Job, Page, SaveResult
from checkpoints.sdk.transport import Call, ServerClock

T = TypeVar("T")

MAX_HEAD_ATTEMPTS = 8


@dataclass(frozen=True)
class Sleep:
    """Yielded by a flow to wait without blocking an event loop."""

    seconds: float


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


def checkpoint_save(
    memory: ClientMemory,
    *,
    thread_id: str,
    agent_id: str,
    state: Any,
    namespace: str = "",
    checkpoint_id: str | None = None,
    parent_id: str | Unset | None = UNSET,
    framework: str = "custom",
    schema_version: str = "1.0",
    step_index: int | None = None,
    step_name: str | None = None,
    run_id: str | None = None,
    context: Any = None,
    metadata: Any = None,
    ttl_seconds: int | Unset | None = UNSET,
    pinned: bool = False,
    user_id: str | None = None,
) -> Flow[SaveResult]:
    """Save with the whole record explicit (so the checksum is computed here and verified by the server).

    `parent_id` omitted: the namespace head, pinned with If-Match (a head that moves meanwhile is re-read and
    the save re-hashed, up to MAX_HEAD_ATTEMPTS). `parent_id=None`: a root. A parent id: that checkpoint
    (the server validates that it exists). The checkpoint id is chosen here (UUIDv7) unless given, which
    makes every attempt an idempotent retry of the same save.
    """
    fields: dict[str, Any] = {
        "thread_id": thread_id,
        "namespace": namespace,
        "checkpoint_id": checkpoint_id or new_id(),
        "agent_id": agent_id,
        "framework": framework,
        "schema_version": schema_version,
        "step_name": step_name,
        "run_id": run_id,
        "state": state,
        "context": context,
        "metadata": metadata,
        "ttl_seconds": ttl_seconds,
        "pinned": pinned,
    }
    if not isinstance(parent_id, Unset):
        if step_index is None:
            step_index = 0
            if parent_id is not None:
                known = memory.step_of(thread_id, namespace, parent_id)
                if known is None:
                    parent: Checkpoint = yield cp_calls.checkpoint_get(
                        thread_id, parent_id, namespace=namespace
                    )
                    known = parent.step_index
                step_index = known + 1
        draft = CheckpointDraft.build(
            **fields, parent_id=parent_id, step_index=step_index, created_at=memory.clock.now()
        )
        saved: SaveResult = yield cp_calls.checkpoint_create(draft, user_id=user_id)
        memory.saw(saved.checkpoint, is_head=True)
        return saved

    for _attempt in range(MAX_HEAD_ATTEMPTS):
        head = memory.head(thread_id, namespace)
        if head is None:
            head = yield from _fetch_head(thread_id, namespace, user_id)
        draft = CheckpointDraft.build(
            **fields,
            parent_id=head.checkpoint_id if head else None,
            step_index=step_index if step_index is not None else (head.step_index + 1 if head else 0),
            created_at=memory.clock.now(),
        )
        try:
            saved = yield cp_calls.thread_state_put(
                draft, if_match=head.checkpoint_id if head else None, user_id=user_id
            )
        except PreconditionFailed:
            memory.forget_head(thread_id, namespace)
            continue
        except ValidationError as exc:
            # Without If-Match (no head known) a head created meanwhile becomes the parent on the server,
            # and the record no longer hashes to the checksum sent: re-read the head and try again.
            if head is None and _checksum_refused(exc):
                memory.forget_head(thread_id, namespace)
                continue
            raise
        memory.saw(saved.checkpoint, is_head=True)
        return saved
    raise Conflict(
        f"the head of {thread_id!r} kept moving; gave up after {MAX_HEAD_ATTEMPTS} attempts",
        details={"thread_id": thread_id, "namespace": namespace},
        status=0,
    )


def _checksum_refused(exc: ValidationError) -> bool:
    fields = exc.details.get("fields")
    return "checksum" in exc.details or (isinstance(fields, dict) and "checksum" in fields)


def _fetch_head(
    thread_id: str, namespace: str, user_id: str | None = None
) -> Generator[Call[Any], Any, Checkpoint | None]:
    """The newest readable checkpoint of the namespace, without its payload (one light request)."""
    try:
        page: Page[Checkpoint] = yield cp_calls.checkpoints_list(
            thread_id, namespace=namespace, limit=1, user_id=user_id
        )
    except NotFound:
        return None
    return page.results[0] if page.results else None


def restore(call: Call[Checkpoint], memory: ClientMemory) -> Flow[Checkpoint]:
    """A restore (already re-hashed by the call's parser), remembered for later saves."""
    checkpoint: Checkpoint = yield call
    memory.saw(checkpoint)
    return checkpoint


def job_wait(job_id: str, *, timeout: float, interval: float = 0.25) -> Flow[Job]:
    """Poll a job until it finishes (succeeded or failed) or `timeout` seconds pass (TimeoutError)."""
    deadline = time.monotonic() + timeout
    delay = interval
    while True:
        job: Job = yield medallion_calls.job_get(job_id)
        if job.finished:
            if job.status == "failed":
                raise JobFailed(f"job {job_id} failed: {job.error}", details={"job": job.raw})
            return job
        if time.monotonic() + delay > deadline:
            raise TimeoutError(f"job {job_id} is still {job.status} after {timeout} s")
        yield Sleep(delay)
        delay = min(delay * 1.5, 2.0)
