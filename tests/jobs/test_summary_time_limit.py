"""The summariser is bounded by the soft time limit on a real worker: a summary that runs past it stops,
its job fails with a message naming the limit, nothing is written, and the worker takes the next job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.jobs.stack import Stack, stack_env, wait_for

pytestmark = pytest.mark.slow


def test_a_summary_past_the_soft_time_limit_stops_cleanly_and_frees_its_worker(tmp_path: Path) -> None:
    # A soft limit of 1 s against a session that takes the summariser well over that (20,000 entries of
    # 3-4 sentences): the limit, not the end of the work, must stop it.
    stack = Stack(
        tmp_path, stack_env(tmp_path, CELERY_TASK_SOFT_TIME_LIMIT="1", CELERY_TASK_TIME_LIMIT="300")
    )
    try:
        stack.manage("migrate", "--no-input")
        drive = stack.driver

        def job(pk: int) -> dict[str, Any]:
            return dict(drive("jobs")[str(pk)])

        long_session = drive("submit_session", transcripts=20_000, sentences_each=[3, 4])
        stack.start_worker()
        stopped = wait_for(
            lambda: job(long_session["pk"]),
            lambda j: j["status"] in ("succeeded", "failed"),
            what="the long summary to stop",
            timeout=120,
        )
        assert stopped == {
            "status": "failed",
            "attempts": 1,  # a time limit is not a transient error: no retry
            "error": "Stopped at the soft time limit (1 s, CELERY_TASK_SOFT_TIME_LIMIT) before it finished.",
            "result": None,
        }
        # The worker is free, and the stopped summary wrote nothing: the next one creates the medallion.
        short_session = drive("submit_session", transcripts=20, sentences_each=[1])
        done = wait_for(
            lambda: job(short_session["pk"]),
            lambda j: j["status"] in ("succeeded", "failed"),
            what="the short summary",
            timeout=60,
        )
        assert done["status"] == "succeeded", done
        assert done["result"]["created"] is True and done["result"]["version"] == 1
    finally:
        stack.close()
