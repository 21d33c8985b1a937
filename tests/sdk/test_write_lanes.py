"""The async saver's write lanes: one request at a time per thread, the tasks that queued meanwhile together
in the next one, each `aput_writes` returning once its own task is stored and raising what storing it alone
would raise (checkpoints/sdk/langgraph/write_lanes.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from checkpoints.sdk import Gone
from checkpoints.sdk.endpoints.langgraph import MAX_WRITE_TASKS
from checkpoints.sdk.langgraph import AsyncCairnSaver
from checkpoints.sdk.langgraph.write_lanes import Task, WriteLanes


class Server:
    """Stores tasks' writes as a server would, one request per call to `send`, refusing a request that holds
    a task named in `refuse` (with that task's own error). Request number n waits for `gates[n]` when there
    is one (the test opens it)."""

    def __init__(self, refuse: frozenset[str] = frozenset(), held: int = 0) -> None:
        self.requests: list[list[str]] = []
        self.stored: list[str] = []
        self.refuse = refuse
        self.gates = [asyncio.Event() for _ in range(held)]

    async def send(self, tasks: list[Task]) -> None:
        names = [task["task_id"] for task in tasks]
        number = len(self.requests)
        self.requests.append(names)
        if number < len(self.gates):
            await self.gates[number].wait()
        await asyncio.sleep(0)
        refused = [name for name in names if name in self.refuse]
        if refused:
            raise ValueError(f"refused {refused[0]}")
        self.stored += names


def write(
    lanes: WriteLanes, server: Server, name: str, thread: str = "t", most: int = MAX_WRITE_TASKS
) -> asyncio.Task[None]:
    return asyncio.ensure_future(lanes.write(thread, {"task_id": name}, server.send, most=most))


def test_tasks_queued_behind_a_request_go_together_in_the_next_one() -> None:
    async def run() -> Server:
        lanes, server = WriteLanes(), Server(held=1)
        first = write(lanes, server, "a")
        await asyncio.sleep(0)  # "a" is out
        queued = [write(lanes, server, name) for name in ("b", "c", "d")]
        other_thread = write(lanes, server, "x", thread="u")
        await asyncio.sleep(0)
        assert not any(task.done() for task in [first, *queued])  # each returns only once stored
        server.gates[0].set()
        await asyncio.gather(first, *queued, other_thread)
        return server

    server = asyncio.run(run())

    assert server.requests == [["a"], ["x"], ["b", "c", "d"]]
    assert sorted(server.stored) == ["a", "b", "c", "d", "x"]


def test_a_request_carries_at_most_the_tasks_the_server_takes_the_queue_in_order() -> None:
    async def run() -> Server:
        lanes, server = WriteLanes(), Server(held=1)
        first = write(lanes, server, "a", most=2)
        await asyncio.sleep(0)
        queued = [write(lanes, server, name, most=2) for name in ("b", "c", "d", "e", "f")]
        await asyncio.sleep(0)
        server.gates[0].set()
        await asyncio.gather(first, *queued)
        return server

    server = asyncio.run(run())

    assert server.requests == [["a"], ["b", "c"], ["d", "e"], ["f"]]
    assert server.stored == ["a", "b", "c", "d", "e", "f"]


def test_the_sdk_and_the_server_agree_on_the_most_tasks_in_a_request() -> None:
    from checkpoints.api.serializers.langgraph import MAX_WRITE_TASKS as SERVERS

    assert MAX_WRITE_TASKS == SERVERS


def test_a_refused_batch_is_sent_again_task_by_task_and_only_the_refused_task_raises() -> None:
    async def run() -> tuple[Server, list[Any]]:
        lanes, server = WriteLanes(), Server(refuse=frozenset({"c"}), held=1)
        first = write(lanes, server, "a")
        await asyncio.sleep(0)
        queued = [write(lanes, server, name) for name in ("b", "c", "d")]
        await asyncio.sleep(0)
        server.gates[0].set()
        return server, await asyncio.gather(first, *queued, return_exceptions=True)

    server, outcomes = asyncio.run(run())

    assert server.requests == [["a"], ["b", "c", "d"], ["b"], ["c"], ["d"]]
    assert outcomes[:2] == [None, None] and outcomes[3] is None
    assert isinstance(outcomes[2], ValueError) and str(outcomes[2]) == "refused c"
    assert server.stored == ["a", "b", "d"]


def test_tasks_taken_by_a_request_whose_sender_was_cancelled_are_sent_by_their_own_callers() -> None:
    async def run() -> tuple[Server, asyncio.Task[None]]:
        lanes, server = WriteLanes(), Server(held=2)
        first = write(lanes, server, "a")
        await asyncio.sleep(0)
        sender, *others = [write(lanes, server, name) for name in ("b", "c", "d")]
        await asyncio.sleep(0)
        server.gates[0].set()  # "a" is stored; "b" takes the queue ("b", "c", "d") into the next request
        while len(server.requests) < 2:
            await asyncio.sleep(0)
        sender.cancel()  # while that request is out
        await asyncio.gather(first, *others)
        await asyncio.gather(sender, return_exceptions=True)
        return server, sender

    server, sender = asyncio.run(run())

    assert sender.cancelled()
    # "c" and "d" were in the abandoned request: each is sent again by its own caller, none waits forever.
    assert server.requests == [["a"], ["b", "c", "d"], ["c"], ["d"]]
    assert server.stored == ["a", "c", "d"]


def test_a_batch_with_an_expired_checkpoint_fails_that_write_alone(cairn_url: str, cairn_key: str) -> None:
    async def run() -> tuple[list[Any], list[tuple[str, str, Any]]]:
        async with AsyncCairnSaver(cairn_url, cairn_key) as saver:
            thread: Any = {"configurable": {"thread_id": "lanes-gone", "checkpoint_ns": ""}}
            kept = await saver.aput(thread, empty_checkpoint(), {}, {})
            expired = await saver.aput(thread, empty_checkpoint(), {}, {})
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {cairn_key}"}) as http:
                gone_id = expired["configurable"]["checkpoint_id"]
                url = f"{cairn_url}/api/v1/threads/lanes-gone/checkpoints/{gone_id}/"
                assert (await http.delete(url)).status_code == 204
            tasks_per_request: list[int] = []
            send = saver.async_client.send

            async def counted(call: Any) -> Any:
                tasks_per_request.append(len(call.body.get("tasks", [call.body])))
                return await send(call)

            saver.async_client.send = counted  # type: ignore[method-assign]
            outcomes = await asyncio.gather(
                saver.aput_writes(kept, [("out", "first")], "task-1"),
                saver.aput_writes(kept, [("out", "second")], "task-2"),
                saver.aput_writes(expired, [("out", "lost")], "task-3"),
                saver.aput_writes(kept, [("out", "third")], "task-4"),
                return_exceptions=True,
            )
            assert tasks_per_request == [1, 3, 1, 1, 1]  # the batch refused, then each of its tasks alone
            stored = await saver.aget_tuple(kept)
            assert stored is not None
            return list(outcomes), sorted(stored.pending_writes or [])

    outcomes, stored = asyncio.run(run())

    assert outcomes[:2] == [None, None] and outcomes[3] is None
    assert isinstance(outcomes[2], Gone)
    assert stored == [("task-1", "out", "first"), ("task-2", "out", "second"), ("task-4", "out", "third")]


@pytest.mark.parametrize("count", [1, 2])
def test_a_thread_leaves_no_lane_behind(count: int) -> None:
    async def run() -> WriteLanes:
        lanes, server = WriteLanes(), Server()
        await asyncio.gather(*(write(lanes, server, f"w{n}") for n in range(count)))
        return lanes

    lanes = asyncio.run(run())
    assert dict(lanes._lanes) == {}
