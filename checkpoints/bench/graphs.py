"""LangGraph: the SDK's `AsyncCairnSaver` (over HTTP) against LangGraph's `AsyncPostgresSaver` (direct
psycopg) on the same PostgreSQL.

- Steps: a graph whose node appends an AI message and updates a small working memory, looping for N
  super-steps (LangGraph saves a checkpoint and the task's writes at every one), run with `ainvoke` on a
  fresh thread each time. Reported per graph step, next to the same graph without any checkpointer
  (LangGraph's own cost, which every saver pays).
- Turns: a chat graph (a human message in, an AI answer out) run for N turns on one thread with each saver.

The bytes each saver stores are measured apart, each on a database of its own: `checkpoints.bench.storage`.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from checkpoints.bench.payloads import sentence
from checkpoints.bench.stats import Sample
from checkpoints.sdk.langgraph import AsyncCairnSaver


class StepState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    step: int
    memory: dict[str, Any]


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def step_graph(steps: int) -> StateGraph[StepState]:
    rng = random.Random(3)  # nosec B311 # seeded generator for reproducible benchmark data, not a secret

    def work(state: StepState) -> dict[str, Any]:
        step = state["step"] + 1
        memory = {**state["memory"], f"fact-{step % 8}": sentence(rng, 8), "last_step": step}
        return {"messages": [AIMessage(content=sentence(rng, 20))], "step": step, "memory": memory}

    builder = StateGraph(StepState)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_conditional_edges("work", lambda state: "work" if state["step"] < steps else END)
    return builder


def chat_graph() -> StateGraph[ChatState]:
    rng = random.Random(5)  # nosec B311 # seeded generator for reproducible benchmark data, not a secret

    def assistant(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=sentence(rng, 40))]}

    builder = StateGraph(ChatState)
    builder.add_node("assistant", assistant)
    builder.add_edge(START, "assistant")
    builder.add_edge("assistant", END)
    return builder


async def _run_steps(saver: BaseCheckpointSaver[Any] | None, steps: int, runs: int) -> Sample:
    graph = step_graph(steps).compile(checkpointer=saver)
    sample = Sample()
    started = time.perf_counter()
    for _ in range(runs):
        config: Any = {"configurable": {"thread_id": f"lg-{uuid.uuid4().hex}"}, "recursion_limit": steps + 10}
        began = time.perf_counter()
        result = await graph.ainvoke(
            {"messages": [HumanMessage(content="go")], "step": 0, "memory": {}}, config
        )
        sample.latencies.append(time.perf_counter() - began)
        if result["step"] != steps:
            raise RuntimeError(f"the graph stopped at step {result['step']}")
    sample.wall = time.perf_counter() - started
    return sample


def _per_step(sample: Sample, steps: int) -> dict[str, Any]:
    summary = sample.summary()
    return {
        "runs": summary["n"],
        "graph_p50_ms": summary["p50_ms"],
        "graph_p99_ms": summary["p99_ms"],
        "per_step_ms": round(sample.p50_ms / steps, 3),
    }


async def _chat_turns(savers: dict[str, BaseCheckpointSaver[Any]], turns: int) -> dict[str, Sample]:
    """Each saver's conversation on one thread, a turn of each in turn: every turn reads the thread's
    latest checkpoint (`get_tuple`) before it saves its own, as a chat agent does for each message."""
    graphs = {name: chat_graph().compile(checkpointer=saver) for name, saver in savers.items()}
    configs: dict[str, Any] = {
        name: {"configurable": {"thread_id": f"turns-{uuid.uuid4().hex}"}} for name in savers
    }
    rngs = {name: random.Random(13) for name in savers}  # nosec B311 # the same messages for each saver
    samples = {name: Sample() for name in savers}
    for _ in range(turns):
        for name, graph in graphs.items():
            began = time.perf_counter()
            await graph.ainvoke({"messages": [HumanMessage(content=sentence(rngs[name], 25))]}, configs[name])
            samples[name].latencies.append(time.perf_counter() - began)
    return samples


async def _steps_all(
    database_url: str, base_url: str, api_key: str, steps: int, runs: int, turns: int
) -> dict[str, Any]:
    results: dict[str, Any] = {"steps": steps}
    await _run_steps(None, steps, 1)  # imports and compilation outside the clock
    results["none"] = _per_step(await _run_steps(None, steps, runs), steps)
    async with AsyncPostgresSaver.from_conn_string(database_url) as postgres:
        await postgres.setup()
        cairn = AsyncCairnSaver(base_url, api_key)
        try:
            await _run_steps(postgres, steps, 1)
            await _run_steps(cairn, steps, 1)
            # Interleaved, so both savers see the same machine (other load, autovacuum, caches).
            pg_sample, cairn_sample = Sample(), Sample()
            for _ in range(runs):
                for saver, sample in ((postgres, pg_sample), (cairn, cairn_sample)):
                    one = await _run_steps(saver, steps, 1)
                    sample.latencies += one.latencies
                    sample.wall += one.wall
            chat = await _chat_turns({"postgres": postgres, "cairn": cairn}, turns)
        finally:
            await cairn.aclose()
    results["postgres"] = _per_step(pg_sample, steps)
    results["cairn"] = _per_step(cairn_sample, steps)
    pg_step, cairn_step = results["postgres"]["per_step_ms"], results["cairn"]["per_step_ms"]
    none_step = results["none"]["per_step_ms"]
    results["ratio_per_step"] = round(cairn_step / pg_step, 2) if pg_step else None
    # The part each saver adds on top of LangGraph itself.
    pg_own, cairn_own = pg_step - none_step, cairn_step - none_step
    results["ratio_saver_only"] = round(cairn_own / pg_own, 2) if pg_own > 0 else None
    results["turns"] = {name: sample.summary() for name, sample in chat.items()}
    pg_turn, cairn_turn = chat["postgres"].p50_ms, chat["cairn"].p50_ms
    results["ratio_per_turn"] = round(cairn_turn / pg_turn, 2) if pg_turn else None
    return results


def bench_graph_steps(
    *, database_url: str, base_url: str, api_key: str, steps: int, runs: int, turns: int
) -> dict[str, Any]:
    """Per-step time of an N-step graph with no saver, AsyncPostgresSaver and AsyncCairnSaver; and the
    time of each turn of a conversation with either saver."""
    return asyncio.run(_steps_all(database_url, base_url, api_key, steps, runs, turns))


async def _cairn_steps(base_url: str, api_key: str, steps: int, runs: int) -> Sample:
    cairn = AsyncCairnSaver(base_url, api_key)
    try:
        await _run_steps(cairn, steps, 1)  # connections and imports outside the clock
        return await _run_steps(cairn, steps, runs)
    finally:
        await cairn.aclose()


def bench_cairn_steps(*, base_url: str, api_key: str, steps: int, runs: int) -> dict[str, Any]:
    """Per-step time of an N-step graph with AsyncCairnSaver alone (the A/B runs of checkpoints.bench.ab)."""
    return _per_step(asyncio.run(_cairn_steps(base_url, api_key, steps, runs)), steps)
