"""What the SDK skips on a LangGraph step, and why each skip is exact: a message carried from step to step
keeps its checked stored form only while it is unchanged, and a save's answer is taken as verified without
hashing again only when it is the very record the SDK hashed (docs/performance.md)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from checkpoints.integrity import canonical_json, record_checksum
from checkpoints.sdk import ChecksumMismatch
from checkpoints.sdk.langgraph import AsyncCairnSaver
from checkpoints.sdk.langgraph.values import MESSAGE, TYPE_KEY, MessageForms, ValueCodec
from checkpoints.sdk.models import CheckpointDraft
from checkpoints.sdk.transport import Response, encode_body


@pytest.fixture
def codec() -> ValueCodec:
    return ValueCodec(JsonPlusSerializer(), forms=MessageForms())


def test_a_message_encoded_again_gives_its_remembered_form(codec: ValueCodec, monkeypatch: Any) -> None:
    message = AIMessage(content="the plan", id="m1", name="planner")
    first = codec.encode(message)
    rebuilds: list[Any] = []
    real = ValueCodec._rebuild_message

    def counted(stored: dict[str, Any]) -> Any:
        rebuilds.append(stored)
        return real(stored)

    monkeypatch.setattr(ValueCodec, "_rebuild_message", staticmethod(counted))

    assert codec.encode([message, message]) == [first, first]
    assert rebuilds == []  # nothing rebuilt to check it again
    assert codec.decode(first) == message


def test_a_message_changed_in_place_is_encoded_again(codec: ValueCodec) -> None:
    message = HumanMessage(content="draft", id="m2")
    assert codec.encode(message)["content"] == "draft"

    message.content = "final"
    message.additional_kwargs["reviewed"] = True
    stored = codec.encode(message)

    assert stored["content"] == "final"
    assert stored["lc"]["additional_kwargs"] == {"reviewed": True}
    assert codec.decode(stored) == message


def test_an_equal_message_that_is_another_object_is_checked_on_its_own(codec: ValueCodec) -> None:
    forms = codec.forms
    assert forms is not None
    first, second = AIMessage(content="same", id="m3"), AIMessage(content="same", id="m3")
    codec.encode(first)
    assert forms.recall(first, 0) is not None
    assert forms.recall(second, 0) is None  # same value, another object: encoded and checked afresh
    assert codec.encode(second) == codec.encode(first)


def test_a_message_json_cannot_rebuild_stays_a_placeholder_and_is_not_remembered(codec: ValueCodec) -> None:
    message = AIMessage(content="odd", additional_kwargs={"when": datetime(2026, 1, 1, tzinfo=UTC)})
    stored = codec.encode(message)
    assert stored[TYPE_KEY] == MESSAGE and "data" in stored  # the exact bytes form
    assert codec.forms is not None and codec.forms.recall(message, 0) is None
    assert codec.decode(stored) == message


def test_metadata_never_uses_forms_checked_under_another_rule() -> None:
    forms = MessageForms()
    message = AIMessage(content="with \x00 inside", id="m4")
    assert "data" not in ValueCodec(JsonPlusSerializer(), forms=forms).encode(message)

    stored = ValueCodec(JsonPlusSerializer(), allow_nul=False, forms=forms).encode(message)
    assert "data" in stored  # NUL is not allowed in metadata: the bytes form, not the remembered JSON


def _draft() -> CheckpointDraft:
    return CheckpointDraft.build(
        thread_id="t",
        checkpoint_id="c2",
        parent_id="c1",
        step_index=1,
        state={"messages": ["hi"]},
        created_at=datetime(2026, 11, 26, 12, 0, 0, 123456, tzinfo=UTC),
    )


def _answer(draft: CheckpointDraft, **changes: Any) -> Response:
    body = {**draft.record(), "checksum": draft.checksum, "state": None, "context": None, "metadata": None}
    return Response(status=201, headers={}, body={**body, **changes})


def test_a_save_answered_with_the_record_sent_is_verified_without_hashing_again(monkeypatch: Any) -> None:
    draft = _draft()
    answer = _answer(draft)
    monkeypatch.setattr("checkpoints.sdk.models.record_checksum", _no_hash)

    saved = draft.saved(answer)

    assert saved.checkpoint.verified and saved.created
    assert saved.checkpoint.state == {"messages": ["hi"]}


def test_a_save_encodes_its_documents_once_and_sends_the_text_it_hashed(monkeypatch: Any) -> None:
    encoded: list[Any] = []

    def counted(value: Any) -> str:
        encoded.append(value)
        return canonical_json(value)

    monkeypatch.setattr("checkpoints.sdk.models.canonical_json", counted)
    draft = _draft()
    sent = encode_body(draft.body(with_parent=True)).decode("utf-8")

    assert len(encoded) == 3  # state, context, metadata: once each, for the checksum and the body alike
    assert f'"state":{canonical_json(draft.state)}' in sent
    assert json.loads(sent)["state"] == draft.state
    assert draft.checksum == record_checksum(draft.record())  # what hashing the decoded record gives


@pytest.mark.parametrize(
    "changes",
    [
        {"parent_id": "c0"},  # the server chose another parent: re-hashed, and the checksum no longer holds
        {"step_index": True},  # equal in Python, another JSON value
        {"agent_id": None},
    ],
)
def test_a_save_answered_with_another_record_is_hashed_again_and_refused(changes: dict[str, Any]) -> None:
    draft = _draft()
    with pytest.raises(ChecksumMismatch):
        draft.saved(_answer(draft, **changes))


def test_a_save_answered_with_the_record_in_another_spelling_is_hashed_again_and_accepted() -> None:
    draft = _draft()
    saved = draft.saved(_answer(draft, created_at="2026-11-26T13:00:00.123456+01:00"))
    assert saved.checkpoint.verified


def _no_hash(record: Any) -> str:
    raise AssertionError("hashed again")


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


def _nested(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [0, 60, 94, 95, 96])
def test_a_message_deep_in_a_value_never_makes_it_deeper_than_the_server_takes(
    codec: ValueCodec, levels: int
) -> None:
    message = AIMessage(content="deep", additional_kwargs={"a": _nested({"b": 1}, 30)})
    assert codec.encode(message)["lc"]["additional_kwargs"]  # at the top it is readable JSON

    stored = codec.encode(_nested(message, levels))  # the same object, remembered at the top, now deeper

    assert _depth(stored) <= 128  # the server refuses JSON nested deeper than 128 levels
    assert codec.decode(stored) == _nested(message, levels)


def test_the_langgraph_draft_is_sent_as_the_codec_made_it() -> None:
    state = {"channel_values": {"messages": [{"__cairn_type__": "message", "role": "user", "content": "x"}]}}
    draft = CheckpointDraft.build(
        exact_json=True, thread_id="t", checkpoint_id="c", state=state, context={}, metadata={},
        created_at=datetime(2026, 11, 26, tzinfo=UTC),
    )  # fmt: skip
    assert draft.state is state  # not copied again
    copied = CheckpointDraft.build(
        thread_id="t", checkpoint_id="c", state=state, created_at=datetime(2026, 11, 26, tzinfo=UTC)
    )
    assert copied.state is not state and draft.checksum == copied.checksum


def _thread_of(call: Any) -> str:
    """The thread a writes call is for: `threads/{t}/checkpoints/{c}/writes/` (one task) or
    `langgraph/threads/{t}/writes/` (several)."""
    parts = call.path.split("/")
    return parts[parts.index("threads") + 1]


def test_the_async_savers_writes_go_one_request_at_a_time_per_thread_the_queued_tasks_together(
    cairn_url: str, cairn_key: str
) -> None:
    in_flight: dict[str, int] = {}
    most: dict[str, int] = {}
    most_overall = 0
    tasks_per_request: dict[str, list[int]] = {}

    async def run() -> list[list[tuple[str, str, Any]]]:
        nonlocal most_overall
        async with AsyncCairnSaver(cairn_url, cairn_key) as saver:
            send = saver.async_client.send

            async def counted(call: Any) -> Any:
                nonlocal most_overall
                thread = _thread_of(call)
                in_flight[thread] = in_flight.get(thread, 0) + 1
                most[thread] = max(most.get(thread, 0), in_flight[thread])
                most_overall = max(most_overall, sum(in_flight.values()))
                tasks_per_request.setdefault(thread, []).append(len(call.body.get("tasks", [call.body])))
                try:
                    return await send(call)
                finally:
                    in_flight[thread] -= 1

            configs = {
                thread: await saver.aput(
                    {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, empty_checkpoint(), {}, {}
                )
                for thread in ("lane-a", "lane-b")
            }
            saver.async_client.send = counted  # type: ignore[method-assign]
            await asyncio.gather(
                *(
                    saver.aput_writes(config, [("out", f"{thread}-{task}")], f"task-{task}")
                    for task in range(3)
                    for thread, config in configs.items()
                )
            )
            tuples = [await saver.aget_tuple(config) for config in configs.values()]
            return [sorted(t.pending_writes or []) if t else [] for t in tuples]

    stored = asyncio.run(run())

    assert most == {"lane-a": 1, "lane-b": 1}  # one thread's writes one request at a time ...
    assert most_overall == 2  # ... and the two threads' at once
    # The first task goes alone; the two that queued behind it go together in the next request.
    assert tasks_per_request == {"lane-a": [1, 2], "lane-b": [1, 2]}
    assert stored == [
        [(f"task-{task}", "out", f"{thread}-{task}") for task in range(3)] for thread in ("lane-a", "lane-b")
    ]
