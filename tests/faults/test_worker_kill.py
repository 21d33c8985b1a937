"""A Celery worker SIGKILLed in the middle of a job (a summary waiting on its model), with Redis as the
broker, behind a live gunicorn: the job does not stay "running" forever — the reaper fails it, visibly,
through the API. (Redis redelivers the unacknowledged message much later — kombu scans for them about every
100 s — and that delivery cannot claim a job that is no longer queued: the claim is a conditional UPDATE.)"""

from __future__ import annotations

import signal
import socket
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from checkpoints.bench.server import Gunicorn, Stack
from tests.faults.conftest import api_client
from tests.faults.services import spawn, stop_group
from tests.jobs.stack import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def unanswering_model() -> Iterator[int]:
    """A port that accepts connections and never answers: a model that hangs mid-request."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


def celery(stack: Stack, name: str, *argv: str) -> subprocess.Popen[bytes]:
    return spawn(stack, name, ["-m", "celery", "-A", "project", *argv, "--loglevel", "INFO"])


def start_worker(stack: Stack, name: str) -> subprocess.Popen[bytes]:
    return celery(stack, name, "worker", "--concurrency", "1", "--without-gossip", "--without-mingle",
                  "--hostname", f"{name}@%h")  # fmt: skip


def test_it_never_leaves_a_job_running_after_its_worker_is_killed(
    make_stack: Callable[..., Stack], web: Callable[..., Gunicorn], unanswering_model: int
) -> None:
    stack = make_stack(
        CAIRN_LLM_PROVIDER="openai",
        CAIRN_LLM_BASE_URL=f"http://127.0.0.1:{unanswering_model}/v1",
        CAIRN_LLM_TIMEOUT_SECONDS="300",
        # Short enough for a test: the reaper runs every second and gives up on a job running 4 s without
        # its worker.
        CAIRN_JOB_ABANDONED_AFTER_SECONDS="4",
        CAIRN_JOB_REAP_INTERVAL_SECONDS="1",
        CAIRN_SWEEP_INTERVAL_SECONDS="3600",
    )
    server = web(stack)
    api = api_client(server.url, stack.api_key("acme", scopes="write"))
    processes = [start_worker(stack, "worker-1")]
    try:
        messages = [
            {"role": "user", "content": "Plan the database migration."},
            {"role": "assistant", "content": "We decided to migrate on Monday because traffic is lowest."},
        ]
        assert api.post("threads/t/messages/", json={"messages": messages}).status_code == 201
        scope = {"scope": {"graph_nodes": ["repo:db"], "tags": ["migration"]}}
        assert api.patch("threads/t/", json=scope).status_code == 200
        submitted = api.post("threads/t/summarize/")
        assert submitted.status_code == 202, submitted.text
        job_url = f"jobs/{submitted.json()['job_id']}/"

        def job() -> dict[str, Any]:
            return dict(api.get(job_url).json())

        wait_for(job, lambda j: j["status"] == "running", timeout=60, what="the worker to start the job")
        stop_group(processes[0], signal.SIGKILL)  # the worker and its pool, mid-job, without any cleanup
        assert job()["status"] == "running"  # nobody is left to finish it ...

        processes += [celery(stack, "beat", "beat"), start_worker(stack, "worker-2")]
        finished = wait_for(
            job, lambda j: j["status"] != "running", timeout=90, what="the job to leave running"
        )
        # ... so the reaper fails it.
        assert finished["status"] == "failed", finished
        assert finished["error"].startswith("Abandoned: its worker stopped without finishing it")
        assert finished["attempts"] == 1 and finished["finished_at"] is not None
        assert "Task checkpoints.tasks.summarize_thread_job" in (stack.root / "worker-1.log").read_text()
    finally:
        for process in processes:
            stop_group(process)
