"""A real LangGraph graph through checkpnt's `CheckpntSaver(client)`: killed mid-run, it resumes from its last
checkpoint in another process against the same live server."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkpoints.sdk.checkpnt import SyncClient
from checkpoints.sdk.checkpnt.langgraph import CheckpntSaver
from checkpoints.sdk.examples.langgraph_agent import build
from tests.sdk.conftest import kill_and_resume, subprocess_env

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


def test_a_killed_graph_resumes_through_checkpnt_saver(
    cairn_url: str, cairn_key: str, tmp_path: Path
) -> None:
    env = subprocess_env(cairn_url, cairn_key)
    config = {"configurable": {"thread_id": "checkpnt-killed"}}
    with CheckpntSaver(SyncClient(cairn_url, cairn_key)) as saver:
        app = build(saver)
        printed, _final = kill_and_resume(["-c", RUN, "checkpnt-killed"], env, tmp_path, saver, app, config)
        # Each run printed its outcome alone.
        assert [out.strip() for out in printed] == ["recovered", "resumed after review", "done"]
        history = list(saver.list(config))  # type: ignore[arg-type]
        assert all(t.parent_config is None or t.parent_config != t.config for t in history)


def test_the_saver_names_the_one_line_switch_for_local_backends() -> None:
    with pytest.raises(
        Exception, match=r"Replace `CheckpntSaver.from_sqlite\('./x.db'\)` with `CheckpntSaver"
    ):
        CheckpntSaver.from_sqlite("./x.db")
