"""One lane per LangGraph thread for the async saver's pending writes (docs/performance.md).

Every task's writes touch their thread's row on the server, so PostgreSQL stores one thread's writes one at a
time whatever the client does. Sent together, a step's writes only wait on that row inside the server's
workers, while the put the next step waits for queues behind them. So a thread's writes go one request at a
time, and writes of different threads still go at once.

LangGraph does not wait for a step's writes, so while one request of a thread is out, the next tasks'
writes queue. The next request carries every task queued by then (`endpoints.langgraph.langgraph_writes`):
one request instead of one per task. `aput_writes` still returns only once its own task's writes are stored,
and raises what storing them alone would raise: a batch the server refuses is sent again task by task
(writes are idempotent), so each task gets its own answer.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Task = dict[str, Any]  # one task's writes, as `endpoints.checkpoints.pending_writes_task` gives them
Send = Callable[[list[Task]], Awaitable[Any]]  # stores these tasks' writes in one request, or raises


@dataclass(eq=False)
class _Queued:
    task: Task
    stored: bool = False
    error: BaseException | None = None


@dataclass(eq=False)
class _Lane:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    queue: list[_Queued] = field(default_factory=list)


class WriteLanes:
    def __init__(self) -> None:
        # A lane lives while a write holds or awaits it, so idle threads leave nothing behind.
        self._lanes: weakref.WeakValueDictionary[str, _Lane] = weakref.WeakValueDictionary()

    def _lane(self, thread_id: str) -> _Lane:
        lane = self._lanes.get(thread_id)
        if lane is None:
            lane = self._lanes[thread_id] = _Lane()
        return lane

    async def write(self, thread_id: str, task: Task, send: Send, *, most: int) -> None:
        """Store `task` in its thread's lane: with the tasks queued behind the request in flight, if any, at
        most `most` tasks in one request."""
        lane = self._lane(thread_id)
        mine = _Queued(task)
        lane.queue.append(mine)
        async with lane.lock:
            while (
                not mine.stored and mine.error is None
            ):  # the queue in order, at most `most` tasks a request
                if mine not in lane.queue:  # taken by a request whose sender was cancelled: send it again
                    lane.queue.insert(0, mine)
                batch, lane.queue = lane.queue[:most], lane.queue[most:]
                await _store(batch, send)
        if mine.error is not None:
            raise mine.error


async def _store(batch: list[_Queued], send: Send) -> None:
    if len(batch) > 1 and await _all_stored(send, [queued.task for queued in batch]):
        for queued in batch:
            queued.stored = True
        return
    for queued in batch:
        try:
            await send([queued.task])
        except Exception as error:
            queued.error = error
        else:
            queued.stored = True


async def _all_stored(send: Send, tasks: list[Task]) -> bool:
    """True once the tasks are stored in one request; False if it failed (each is then sent on its own)."""
    try:
        await send(tasks)
    except Exception:
        return False
    return True
