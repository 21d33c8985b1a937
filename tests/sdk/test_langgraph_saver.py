"""CairnSaver details the conformance suite does not reach: how values are stored (readable JSON, messages as
role + content, typed placeholders), channels left off the wire when unchanged, the fallback when the parent
lost them, workspace-wide listing, subgraph namespaces, end-to-end checksums, and checkpnt's saver bugs."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any, TypedDict
from uuid import uuid4

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import ERROR, INTERRUPT, WRITES_IDX_MAP, empty_checkpoint
from langgraph.graph import START, StateGraph

from checkpoints.sdk import AsyncClient, ChecksumMismatch, Client
from checkpoints.sdk.langgraph import CairnSaver

Json = dict[str, Any]


def _config(thread_id: str, checkpoint_id: str | None = None, ns: str = "") -> Any:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _meta(**values: Any) -> Any:
    """LangGraph metadata with custom keys (its TypedDict lists only the standard ones)."""
    return values


def _checkpoint(values: dict[str, Any], versions: dict[str, Any]) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = versions
    return checkpoint


@pytest.fixture
def saver(cairn_url: str, cairn_key: str) -> Any:
    with CairnSaver(cairn_url, cairn_key) as saver:
        yield saver


@pytest.fixture
def wire(saver: CairnSaver) -> list[Json]:
    """Every JSON body the saver's blocking client sends, in order."""
    sent: list[Json] = []

    def capture(request: httpx.Request) -> None:
        if request.content:
            sent.append({"path": request.url.path, "body": json.loads(request.content)})

    saver.client.transport.http.event_hooks["request"].append(capture)
    return sent


def test_it_stores_json_as_json_messages_as_role_and_content_and_the_rest_as_sized_placeholders(
    saver: CairnSaver, client: Client
) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    values = {
        "plain": {"n": 1, "items": [1.5, "two", None, True]},
        "messages": [
            HumanMessage(content="hi", id="m1"),
            AIMessage(content="", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}], id="m2"),
        ],
        "when": when,
        "raw": b"\x00\x01bytes",
        "odd": {"__cairn_type__": "a user key that looks like ours"},
        "nan": math.nan,
        "nul": "a\x00b",
    }
    stored = saver.put(
        _config("values"), _checkpoint(values, {k: 1 for k in values}), _meta(note={"nested": "x\x00y"}), {}
    )

    restored = saver.get_tuple(stored)
    assert restored is not None
    got = restored.checkpoint["channel_values"]
    assert {k: got[k] for k in ("plain", "messages", "when", "raw", "odd", "nul")} == {
        k: values[k] for k in ("plain", "messages", "when", "raw", "odd", "nul")
    }
    assert math.isnan(got["nan"])
    # LangGraph strips NUL from top-level metadata strings itself; a nested one is kept (as a placeholder,
    # since metadata is also jsonb, which cannot hold NUL).
    assert _meta(**restored.metadata)["note"] == {"nested": "x\x00y"}

    # What the API (and the dashboard) sees.
    state = client.checkpoint_get("values", stored["configurable"]["checkpoint_id"], namespace="").state
    shown = state["channel_values"]
    assert shown["plain"] == values["plain"]
    assert [(m["role"], m["content"]) for m in shown["messages"]] == [("user", "hi"), ("assistant", "")]
    assert shown["messages"][1]["lc"]["tool_calls"][0]["name"] == "f"
    for name in ("when", "raw", "odd", "nan"):
        assert set(shown[name]) == {"__cairn_type__", "size", "serde", "data"}, name
        assert shown[name]["size"] > 0
    assert shown["when"]["__cairn_type__"] == "datetime.datetime"
    assert shown["nul"] == "a\x00b"  # state may hold NUL (it is text); metadata may not (jsonb)


def test_it_sends_only_changed_channels_yet_stores_every_value(
    saver: CairnSaver, client: Client, wire: list[Json]
) -> None:
    big = {"document": "x" * 50_000}
    first = saver.put(
        _config("delta"),
        _checkpoint({"doc": big, "n": 1}, {"doc": "1.a", "n": "1.a"}),
        {"step": 0},
        {"doc": "1.a", "n": "1.a"},
    )
    second = saver.put(
        _config("delta", first["configurable"]["checkpoint_id"]),
        _checkpoint({"doc": big, "n": 2}, {"doc": "1.a", "n": "2.b"}),
        {"step": 1},
        {"n": "2.b"},
    )
    body = wire[-1]["body"]
    assert wire[-1]["path"].endswith("/langgraph/threads/delta/checkpoints/")
    assert body["state"]["channel_values"] == {"n": 2}
    assert body["inherit"] == {
        "checkpoint_id": first["configurable"]["checkpoint_id"],
        "channels": {"doc": "1.a"},
    }
    assert len(json.dumps(body)) < 5_000  # the 50 kB document stayed home

    stored = client.checkpoint_get("delta", second["configurable"]["checkpoint_id"], namespace="")
    assert stored.verified and stored.state["channel_values"] == {"doc": big, "n": 2}
    # Whole checkpoints: expiring the parent does not take the value away from the child.
    client.checkpoint_expire("delta", first["configurable"]["checkpoint_id"], namespace="")
    again = saver.get_tuple(second)
    assert again is not None and again.checkpoint["channel_values"]["doc"] == big


def test_it_sends_every_value_when_the_parent_no_longer_holds_them(
    saver: CairnSaver, client: Client, wire: list[Json], cairn_url: str, cairn_key: str
) -> None:
    first = saver.put(_config("fallback"), _checkpoint({"a": "kept", "b": 1}, {"a": "1", "b": "1"}), {}, {})
    client.checkpoint_expire("fallback", first["configurable"]["checkpoint_id"], namespace="")
    with CairnSaver(cairn_url, cairn_key) as fresh:  # knows nothing of the parent
        fresh.client.transport.http.event_hooks["request"].append(
            lambda r: wire.append({"path": r.url.path, "body": json.loads(r.content)}) if r.content else None
        )
        child = fresh.put(
            _config("fallback", first["configurable"]["checkpoint_id"]),
            _checkpoint({"a": "kept", "b": 2}, {"a": "1", "b": "2"}),
            {},
            {"b": "2"},
        )
        attempts = [w["body"] for w in wire if w["path"].endswith("/langgraph/threads/fallback/checkpoints/")]
        assert "inherit" in attempts[-2] and "inherit" not in attempts[-1]
        restored = fresh.get_tuple(child)
    assert restored is not None and restored.checkpoint["channel_values"] == {"a": "kept", "b": 2}
    assert restored.parent_config is not None  # the parent is a tombstone, but still the parent


def test_it_lists_across_threads_with_filter_before_and_limit(saver: CairnSaver) -> None:
    ids = []
    for thread in ("wide-a", "wide-b", "wide-a", "wide-b"):
        checkpoint = empty_checkpoint()
        saver.put(_config(thread), checkpoint, _meta(source="loop", owner=thread), {})
        ids.append(checkpoint["id"])
    everything = [t.checkpoint["id"] for t in saver.list(None)]
    assert everything == sorted(ids, reverse=True)
    owned = [t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"owner": "wide-b"})]
    assert owned == ["wide-b", "wide-b"]
    older = [t.checkpoint["id"] for t in saver.list(None, before=_config("wide-b", ids[2]), limit=1)]
    assert older == [ids[1]]
    assert list(saver.list(None, limit=0)) == []


def test_it_keeps_the_real_parent_pending_writes_and_special_channels(saver: CairnSaver) -> None:
    """checkpnt's LangGraph saver pointed every parent at itself, dropped pending writes and ignored
    filter/before; here each survives a round trip."""
    first = saver.put(_config("seed-bugs"), empty_checkpoint(), {"step": 0}, {})
    second = saver.put(
        _config("seed-bugs", first["configurable"]["checkpoint_id"]), empty_checkpoint(), {"step": 1}, {}
    )
    saver.put_writes(
        second, [("ch", {"v": 1}), (ERROR, ValueError("boom")), (INTERRUPT, "ask")], "task-1", "a:b"
    )
    saver.put_writes(second, [(ERROR, ValueError("boom again"))], "task-1")  # special channels are replaced

    loaded = saver.get_tuple(second)
    assert loaded is not None and loaded.parent_config is not None
    assert loaded.parent_config["configurable"]["checkpoint_id"] == first["configurable"]["checkpoint_id"]
    assert loaded.parent_config["configurable"]["checkpoint_id"] != second["configurable"]["checkpoint_id"]
    writes = {channel: value for _task, channel, value in loaded.pending_writes or []}
    assert writes["ch"] == {"v": 1} and writes[INTERRUPT] == "ask"
    # Exactly what LangGraph's own serializer gives back for an error (every LangGraph saver does the same).
    assert writes[ERROR] == saver.serde.loads_typed(saver.serde.dumps_typed(ValueError("boom again")))
    assert len(loaded.pending_writes or []) == 3
    assert WRITES_IDX_MAP[ERROR] < 0

    # Writes that arrive before their checkpoint is saved are kept for it.
    early = empty_checkpoint()
    saver.put_writes(_config("seed-bugs", early["id"]), [("ch", "early")], "task-2")
    saved = saver.put(_config("seed-bugs", second["configurable"]["checkpoint_id"]), early, {"step": 2}, {})
    assert [(w[1], w[2]) for w in saver.get_tuple(saved).pending_writes or []] == [("ch", "early")]  # type: ignore[union-attr]


def test_it_stores_subgraph_checkpoints_in_their_namespaces(saver: CairnSaver) -> None:
    class State(TypedDict):
        log: list[str]

    inner = StateGraph(State)
    inner.add_node("inner_step", lambda s: {"log": [*s["log"], "inner"]})
    inner.add_edge(START, "inner_step")
    outer = StateGraph(State)
    outer.add_node("child", inner.compile())
    outer.add_node("after", lambda s: {"log": [*s["log"], "after"]})
    outer.add_edge(START, "child")
    outer.add_edge("child", "after")
    app = outer.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "subgraphs"}}

    assert app.invoke({"log": []}, config)["log"] == ["inner", "after"]
    namespaces = {
        t.config["configurable"]["checkpoint_ns"]
        for t in saver.list({"configurable": {"thread_id": "subgraphs"}})
    }
    assert "" in namespaces and any(ns.startswith("child:") for ns in namespaces)
    assert app.get_state(config).values["log"] == ["inner", "after"]


def test_it_refuses_a_tampered_checkpoint_on_restore(
    cairn_url: str, cairn_key: str, saver: CairnSaver
) -> None:
    """The server verifies what it stores; the SDK re-verifies what it receives, so a payload altered on the
    way (a proxy, a cache) is refused too."""
    stored = saver.put(_config("tamper"), _checkpoint({"amount": 10}, {"amount": 1}), {}, {})

    def alter(response: httpx.Response) -> None:
        response.read()
        body = response.content.replace(b'"amount":10', b'"amount":99')
        response._content = body  # what a man in the middle would do

    tampering = httpx.Client(base_url=cairn_url, headers={"Authorization": f"Bearer {cairn_key}"})
    tampering.event_hooks["response"].append(alter)
    with (
        CairnSaver(
            client=Client(cairn_url, cairn_key, http_client=tampering),
            async_client=AsyncClient(cairn_url, cairn_key),
        ) as victim,
        pytest.raises(ChecksumMismatch) as refused,
    ):
        victim.get_tuple(stored)
    assert refused.value.status == 0  # refused by the SDK: the server's copy is intact
    assert saver.get_tuple(stored) is not None


def test_it_refuses_thread_ids_cairn_cannot_address(saver: CairnSaver) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        saver.put(_config("has spaces/and slashes"), empty_checkpoint(), {}, {})


def test_it_generates_increasing_versions_unique_per_branch(saver: CairnSaver) -> None:
    first = saver.get_next_version(None, None)
    second = saver.get_next_version(first, None)
    assert first < second and second.startswith("0" * 31 + "2.")
    assert saver.get_next_version(first, None) != second  # a fork's version 2 is not the original's
    assert saver.get_next_version(7, None).startswith("0" * 31 + "8.")  # type: ignore[arg-type]


def test_it_names_each_run_and_step_for_the_dashboard(saver: CairnSaver, client: Client) -> None:
    run_id = str(uuid4())
    stored = saver.put(
        _config("labels"), empty_checkpoint(), {"source": "loop", "step": 4, "run_id": run_id}, {}
    )
    record = client.checkpoint_get("labels", stored["configurable"]["checkpoint_id"], namespace="")
    assert (record.framework, record.step_index, record.step_name, record.run_id) == (
        "langgraph",
        4,
        "loop",
        run_id,
    )
    assert record.schema_version.startswith("langgraph.v")
