"""A real LangGraph graph through checkpnt's `CheckpntSaver(client)`: killed mid-run, it resumes from its last
checkpoint in another process against the same live server."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkpoints.sdk.checkpnt import SyncClient
from checkpoints.sdk.checkpnt.langgraph import CheckpntSaver
from checkpoints.sdk.examples.langgraph_agent import build
from tests.sdk.conftest import PYTHON, assert_resumed_to_the_end, kill_in_tools, run_python, subprocess_env

pytestmark = pytest.mark.slow

# The graph of checkpoints.sdk.examples.langgraph_agent, with checkpnt's constructor as the one change.
RUN = """
import asyncio, sys
from checkpoints.sdk.checkpnt import Client
from checkpoints.sdk.checkpnt.langgraph import CheckpntSaver
from checkpoints.sdk.examples.langgraph_agent import build, step

async def main():
    async with CheckpntSaver(Client.from_env()) as saver:
        print(step(build(saver), sys.argv[1]))

asyncio.run(main())
"""


def _run(env: dict[str, str], thread_id: str) -> str:
    return run_python(PYTHON, ["-c", RUN, thread_id], env, timeout=120)


def test_a_killed_graph_resumes_through_checkpnt_saver(
    cairn_url: str, cairn_key: str, tmp_path: Path
) -> None:
    marker, log = tmp_path / "in-tools", tmp_path / "nodes.log"
    env = {**subprocess_env(cairn_url, cairn_key), "CAIRN_EXAMPLE_LOG": str(log)}
    config = {"configurable": {"thread_id": "checkpnt-killed"}}
    with CheckpntSaver(SyncClient(cairn_url, cairn_key)) as saver:
        kill_in_tools(["-c", RUN, "checkpnt-killed"], env, marker, saver, config)

        assert _run(env, "checkpnt-killed").strip() == "recovered"  # continues at `tools`, stops at review
        assert _run(env, "checkpnt-killed").strip() == "resumed after review"
        assert _run(env, "checkpnt-killed").strip() == "done"

        assert_resumed_to_the_end(log, build(saver).get_state(config))  # type: ignore[arg-type]
        history = list(saver.list(config))  # type: ignore[arg-type]
        assert all(t.parent_config is None or t.parent_config != t.config for t in history)


def test_the_saver_names_the_one_line_switch_for_local_backends() -> None:
    with pytest.raises(
        Exception, match=r"Replace `CheckpntSaver.from_sqlite\('./x.db'\)` with `CheckpntSaver"
    ):
        CheckpntSaver.from_sqlite("./x.db")
