"""A real StateGraph (plan -> tool-like node -> interrupt for review -> finish) checkpointed in Cairn over
HTTP: a killed run resumes in a new process, history and forks work, two threads run concurrently."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from checkpoints.sdk import Client
from checkpoints.sdk.examples.langgraph_agent import build, step
from checkpoints.sdk.langgraph import AsyncCairnSaver, CairnSaver
from tests.sdk.conftest import kill_and_resume, subprocess_env

pytestmark = pytest.mark.slow

EXAMPLE = "checkpoints.sdk.examples.langgraph_agent"


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def test_it_resumes_a_killed_run_from_the_last_checkpoint_in_a_new_process(
    cairn_url: str, cairn_key: str, tmp_path: Path
) -> None:
    env = subprocess_env(cairn_url, cairn_key)
    with CairnSaver(cairn_url, cairn_key) as saver:
        args, config = ["-m", EXAMPLE, "killed-run"], _config("killed-run")
        _printed, final = kill_and_resume(args, env, tmp_path, saver, build(saver), config)
        # Not JSON, so stored through LangGraph's own serializer, which (like every LangGraph saver) gives
        # a tuple back as a list.
        assert final.values["numbers"] == [6, 7]
        assert isinstance(final.values["started_at"], datetime)
        kinds = [type(m) for m in final.values["messages"]]
        assert kinds == [HumanMessage, AIMessage, ToolMessage, ToolMessage, HumanMessage, AIMessage]


def test_it_travels_back_in_history_and_forks_with_update_state(
    cairn_url: str, cairn_key: str, client: Client
) -> None:
    with CairnSaver(cairn_url, cairn_key) as saver:
        app = build(saver)
        config = _config("travel")
        assert step(app, "travel") == "started"
        assert step(app, "travel") == "resumed after review"
        original_final = app.get_state(config)

        history = list(app.get_state_history(config))
        steps = [(snapshot.metadata or {}).get("step", 0) for snapshot in history]
        assert steps == sorted(steps, reverse=True) and steps[-1] == -1
        before_review = next(s for s in history if s.next == ("review",))
        assert before_review.interrupts  # review ran there and asked its question
        assert before_review.values["results"] == {"add": 13, "multiply": 42}

        fork_config = app.update_state(before_review.config, {"results": {"add": 0, "multiply": 0}})
        fork = app.get_state(fork_config)
        assert fork.parent_config is not None
        assert (
            fork.parent_config["configurable"]["checkpoint_id"]
            == before_review.config["configurable"]["checkpoint_id"]
        )
        app.invoke(None, fork_config)  # runs review from the fork: interrupts again
        answer: Command[Any] = Command(resume="no")
        app.invoke(answer, config)
        forked_final = app.get_state(config)
        assert forked_final.values["results"] == {"add": 0, "multiply": 0}
        assert forked_final.values["approved"] is False

        # The original branch is untouched and still readable by its checkpoint id.
        again = app.get_state(original_final.config)
        assert again.values["approved"] is True and again.values["results"] == {"add": 13, "multiply": 42}
        # Cairn's lineage of the new head walks back through the fork point.
        head_id = forked_final.config["configurable"]["checkpoint_id"]
        ancestors = client.checkpoint_lineage("travel", head_id, namespace="", limit=50).results
        assert before_review.config["configurable"]["checkpoint_id"] in [a.checkpoint_id for a in ancestors]


def test_it_runs_two_threads_concurrently_without_interference(cairn_url: str, cairn_key: str) -> None:
    async def run_both() -> list[dict[str, Any]]:
        async with AsyncCairnSaver(cairn_url, cairn_key) as saver:
            app = build(saver)

            async def run(thread_id: str, numbers: tuple[int, int]) -> dict[str, Any]:
                config = _config(thread_id)
                start: dict[str, Any] = {"numbers": numbers, "messages": [HumanMessage(content=thread_id)]}
                await app.ainvoke(start, config)
                answer: Command[Any] = Command(resume="yes")
                await app.ainvoke(answer, config)
                return (await app.aget_state(config)).values

            return list(await asyncio.gather(run("left", (1, 2)), run("right", (10, 20))))

    left, right = asyncio.run(run_both())
    assert left["results"] == {"add": 3, "multiply": 2}
    assert right["results"] == {"add": 30, "multiply": 200}
    assert left["messages"][0].content == "left" and right["messages"][0].content == "right"
    assert len(left["messages"]) == len(right["messages"]) == 6
