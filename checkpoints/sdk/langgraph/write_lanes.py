"""One lane per LangGraph thread for the async saver's pending writes (README, "Performance").

Every task's writes touch their thread's row on the server, so PostgreSQL stores one thread's writes one at a
time whatever the client does. Sent together, a step's writes only wait on that row inside the server's
workers — and a write that finds the row changed by the step's own put is stored again under the thread's
lock — while the put the next step waits for queues behind them. Sent one at a time per thread, they cost
the server one worker, and writes of different threads still go at once. `aput_writes` still returns only
once its writes are stored.
"""

from __future__ import annotations

import asyncio
import weakref


class WriteLanes:
    def __init__(self) -> None:
        # A lane lives while a write holds or awaits it, so idle threads leave nothing behind.
        self._lanes: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def lane(self, thread_id: str) -> asyncio.Lock:
        lane = self._lanes.get(thread_id)
        if lane is None:
            lane = self._lanes[thread_id] = asyncio.Lock()
        return lane
