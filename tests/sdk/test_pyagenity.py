"""PyAgenity parity against a live server, without PyAgenity installed (Python 3.11): state, messages and
threads keyed by thread_id + user_id, async and sync, with the seed's return values — and a user never
reading, writing or listing another user's threads (PyAgenity had no user isolation). With PyAgenity itself:
tests/sdk/test_seed_pyagenity.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from checkpoints.sdk import Client, NotFound
from checkpoints.sdk.pyagenity import CairnCheckpointer, ThreadInfo

ALICE = {"thread_id": "conv_123", "user_id": "alice"}
BOB_ON_ALICES = {"thread_id": "conv_123", "user_id": "bob"}


@dataclass
class AgentState:
    context: list[str] = field(default_factory=list)
    step: int = 0


@pytest.fixture
def checkpointer(cairn_url: str, cairn_key: str) -> Any:
    saver = CairnCheckpointer(cairn_url, cairn_key)
    yield saver
    saver.release()


def test_it_keeps_state_messages_and_threads_async(checkpointer: CairnCheckpointer) -> None:
    async def scenario() -> None:
        assert await checkpointer.aget_state(ALICE) is None
        await checkpointer.aput_state(ALICE, {"context": ["hi"], "step": 1})
        await checkpointer.aput_state(ALICE, {"context": ["hi", "there"], "step": 2})
        assert await checkpointer.aget_state(ALICE) == {"context": ["hi", "there"], "step": 2}
        assert await checkpointer.aget_state_cache(ALICE) == {"context": ["hi", "there"], "step": 2}

        assert await checkpointer.asetup() is True
        assert await checkpointer.aput_messages(
            ALICE,
            [
                {"role": "user", "content": "What's the weather in Lyon?"},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Sunny in Lyon."}],
                    "tools_calls": [{"id": "call-1", "name": "weather", "args": {"city": "Lyon"}}],
                    "reasoning": "asked the tool",
                },
                {"role": "tool", "content": "22C", "tool_call_id": "call-1"},
            ],
            metadata={"execution_step": 3, "node": "tool_executor"},
        )
        stored = await checkpointer.alist_messages(ALICE)
        assert [m.seq for m in stored] == [1, 2, 3]
        assert stored[1].content == "Sunny in Lyon." and stored[1].content_blocks == [
            {"type": "text", "text": "Sunny in Lyon."}
        ]
        assert stored[0].metadata == {"execution_step": 3, "node": "tool_executor"}
        # PyAgenity's `tools_calls` is Cairn's `tool_calls`; its `reasoning` is kept in the metadata.
        assert stored[1].tool_calls == [{"id": "call-1", "name": "weather", "args": {"city": "Lyon"}}]
        assert stored[1].metadata["reasoning"] == "asked the tool"
        found = await checkpointer.alist_messages(ALICE, search="weather")
        assert [m.seq for m in found] == [1]
        assert [m.seq for m in await checkpointer.alist_messages(ALICE, offset=1, limit=1)] == [2]
        assert (await checkpointer.aget_message(ALICE, stored[2].message_id)).tool_call_id == "call-1"
        assert await checkpointer.adelete_message(ALICE, stored[2].message_id) is True
        assert [m.seq for m in await checkpointer.alist_messages(ALICE)] == [1, 2]
        with pytest.raises(ValueError, match="limit"):
            await checkpointer.alist_messages(ALICE, limit=0)  # pyagenity returned everything

        assert await checkpointer.aput_thread(
            ALICE,
            ThreadInfo(thread_id="conv_123", thread_name="Weather", metadata={"tags": ["w"]}, run_id="r-1"),
        )
        info = await checkpointer.aget_thread(ALICE)
        assert (info.thread_name, info.user_id, info.run_id) == ("Weather", None, "r-1")  # as put
        assert info.metadata == {"tags": ["w"]}
        await checkpointer.aput_state({"thread_id": "conv_456", "user_id": "alice"}, {"step": 0})
        listed = await checkpointer.alist_threads({"user_id": "alice"})
        assert sorted(t.thread_id for t in listed) == ["conv_123", "conv_456"]
        assert [
            t.thread_id for t in await checkpointer.alist_threads({"user_id": "alice"}, search="Weath")
        ] == ["conv_123"]
        # The seed's default: no metadata at all.
        assert await checkpointer.aput_thread(ALICE, ThreadInfo(thread_id="conv_123", metadata=None))
        assert (await checkpointer.aget_thread(ALICE)).metadata is None

        assert await checkpointer.aclear_state(ALICE) is True
        assert await checkpointer.aget_state(ALICE) is None
        assert [m.seq for m in await checkpointer.alist_messages(ALICE)] == [1, 2]  # messages stay
        assert await checkpointer.aclean_thread(ALICE) is True
        assert await checkpointer.aget_thread(ALICE) is None
        assert await checkpointer.aclean_thread(ALICE) is False  # nothing left to clean
        assert await checkpointer.arelease() is True  # its connections belong to this event loop

    asyncio.run(scenario())


def test_a_user_never_reaches_another_users_threads(checkpointer: CairnCheckpointer, client: Client) -> None:
    checkpointer.put_state(ALICE, {"secret": "alice's"})
    checkpointer.put_messages(ALICE, [{"role": "user", "content": "alice's message"}])
    message_id = checkpointer.list_messages(ALICE)[0].message_id

    # Reading: another user's thread looks exactly like a missing one.
    assert checkpointer.get_state(BOB_ON_ALICES) is None
    assert checkpointer.list_messages(BOB_ON_ALICES) == []
    assert checkpointer.get_thread(BOB_ON_ALICES) is None
    with pytest.raises(NotFound):
        checkpointer.get_message(BOB_ON_ALICES, message_id)
    # Writing: refused, and nothing changes.
    with pytest.raises(NotFound):
        checkpointer.put_state(BOB_ON_ALICES, {"secret": "bob overwrote it"})
    with pytest.raises(NotFound):
        checkpointer.put_messages(BOB_ON_ALICES, [{"role": "user", "content": "bob was here"}])
    with pytest.raises(NotFound):
        checkpointer.put_thread(BOB_ON_ALICES, ThreadInfo(thread_id="conv_123", thread_name="mine now"))
    with pytest.raises(NotFound):
        checkpointer.delete_message(BOB_ON_ALICES, message_id)
    checkpointer.clear_state(BOB_ON_ALICES)
    assert checkpointer.clean_thread(BOB_ON_ALICES) is False
    # Listing: only one's own threads, whatever the search.
    checkpointer.put_state({"thread_id": "bobs", "user_id": "bob"}, {"n": 1})
    assert [t.thread_id for t in checkpointer.list_threads({"user_id": "bob"})] == ["bobs"]
    assert checkpointer.list_threads({"user_id": "bob"}, search="conv") == []
    with pytest.raises(ValueError, match="user_id"):
        checkpointer.list_threads({})  # never a silent default user

    assert checkpointer.get_state(ALICE) == {"secret": "alice's"}
    assert [m.content for m in checkpointer.list_messages(ALICE)] == ["alice's message"]
    assert client.thread_get("conv_123").user_id == "alice"
    # A thread with no owner (made through the API) belongs to no checkpointer user either.
    client.thread_create("unowned")
    assert checkpointer.get_state({"thread_id": "unowned", "user_id": "alice"}) is None
    with pytest.raises(ValueError, match="user_id"):
        checkpointer.get_state({"thread_id": "conv_123"})


def test_it_rebuilds_typed_states(cairn_url: str, cairn_key: str) -> None:
    typed = CairnCheckpointer(cairn_url, cairn_key, state_type=AgentState)
    typed.put_state(ALICE, AgentState(context=["a"], step=4))
    restored = typed.get_state(ALICE)
    assert restored == AgentState(context=["a"], step=4)
    # `config["state_class"]` wins over the checkpointer's `state_type`, as in PyAgenity.
    assert typed.get_state({**ALICE, "state_class": Plan}) == Plan(context=["a"], step=4)
    assert typed.setup() is True
    assert typed.release() is True


@dataclass
class Plan:
    context: list[str]
    step: int


def test_a_thread_info_comes_back_as_it_was_put(checkpointer: CairnCheckpointer) -> None:
    """As PyAgenity's InMemoryCheckpointer: nothing filled in (user, update time, metadata) and nothing
    added (run_id stays out of the metadata); each put replaces the whole ThreadInfo."""
    named = ThreadInfo(thread_id="conv_123", thread_name="Weather", metadata={"tags": ["w"]}, run_id="r-1")
    assert checkpointer.put_thread(ALICE, named) is True
    assert checkpointer.get_thread(ALICE) == named
    assert checkpointer.list_threads({"user_id": "alice"}) == [named]
    assert [t.thread_id for t in checkpointer.list_threads({"user_id": "alice"}, search="Weath")] == [
        "conv_123"
    ]
    bare = ThreadInfo(thread_id="conv_123")
    checkpointer.put_thread(ALICE, bare)
    assert checkpointer.get_thread(ALICE) == bare
    assert checkpointer.list_threads({"user_id": "alice"}, search="Weath") == []  # the name went with it
    dated = ThreadInfo(
        thread_id="conv_123", user_id="alice", metadata={}, updated_at=datetime(2026, 11, 28, 9, tzinfo=UTC)
    )
    checkpointer.put_thread(ALICE, dated)
    assert checkpointer.get_thread(ALICE) == dated
    # A thread whose info was never put (made by a state save) is described from Cairn's thread, as
    # PyAgenity's PgCheckpointer does.
    checkpointer.put_state({"thread_id": "conv_456", "user_id": "alice"}, {"step": 0})
    made = checkpointer.get_thread({"thread_id": "conv_456", "user_id": "alice"})
    assert (made.thread_id, made.user_id, made.thread_name, made.metadata) == ("conv_456", "alice", None, {})
