"""Several instances of the production layout on one PostgreSQL and one Redis: two `web` instances (the
Procfile's command, each with its own data folder), two Celery workers and one beat. Nothing is local to an
instance: a head saved on one is the head on the other at once, a key's rate is counted once across both, a
revoked key fails on both at once, a sign-in lock taken on one holds on the other, every job runs once, and
overlapping sweeps and summaries claim each checkpoint and each message once."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest

from checkpoints.bench.server import PYTHON, REPO, Gunicorn, Stack, bench_database, database_name
from tests.jobs.stack import wait_for
from tests.production.conftest import api_client

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

EXPIRING = 8
MESSAGES = 30
LOGIN_MAX_FAILURES = 3  # a password check costs about half a second: few failures keep the test short
PASSWORD = "correct horse battery staple"


@dataclasses.dataclass
class Deployment:
    stack: Stack
    web: list[Gunicorn]
    celery: dict[str, subprocess.Popen[bytes]]

    def log(self, name: str) -> str:
        return (self.stack.root / f"{name}.log").read_text(errors="replace")


def _celery(stack: Stack, name: str, *argv: str) -> subprocess.Popen[bytes]:
    """A Procfile-like Celery process with a data folder of its own."""
    own = dataclasses.replace(stack, root=stack.root / name)
    own.root.mkdir()
    log = (stack.root / f"{name}.log").open("wb")
    return subprocess.Popen(  # its own session: stopped with its pool processes
        [PYTHON, "-m", "celery", "-A", "project", *argv, "--loglevel", "INFO"],
        cwd=REPO,
        env=own.env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """Started once for the module: each test works in a workspace (and with a key) of its own."""
    tmp_path = tmp_path_factory.mktemp("instances")
    url = os.environ["DATABASE_URL"]
    name = f"{database_name(url) or 'cairn'}_instances_{uuid.uuid4().hex[:8]}"
    with bench_database(url, name) as database_url, contextlib.ExitStack() as running:
        # A sweep every second, so that beat's sweeps overlap with the ones asked for through the API.
        stack = Stack.create(
            database_url,
            os.environ["REDIS_URL"],
            tmp_path,
            CAIRN_SWEEP_INTERVAL_SECONDS="1",
            CAIRN_LOGIN_MAX_FAILURES=str(LOGIN_MAX_FAILURES),
        )
        running.callback(stack.forget_cache)
        stack.manage("migrate", "--no-input")
        web = []
        for instance in ("web-a", "web-b"):
            server = Gunicorn(dataclasses.replace(stack, root=tmp_path / instance), workers=2)
            server.stack.root.mkdir()
            server.start()
            running.callback(server.stop)
            web.append(server)
        celery = {
            "worker-1": _celery(stack, "worker-1", "worker", "--concurrency", "2", "--hostname", "w1@%h"),
            "worker-2": _celery(stack, "worker-2", "worker", "--concurrency", "2", "--hostname", "w2@%h"),
            "beat": _celery(stack, "beat", "beat"),
        }
        for process in celery.values():
            running.callback(_stop, process)
        yield Deployment(stack, web, celery)


def _both(deployment: Deployment, key: str) -> tuple[httpx.Client, httpx.Client]:
    a, b = deployment.web
    return api_client(a.url, key), api_client(b.url, key)


def test_a_save_on_one_instance_is_the_head_on_the_other_at_once(deployment: Deployment) -> None:
    a, b = _both(deployment, deployment.stack.api_key("heads", scopes="write"))
    with a, b:
        for step in range(10):
            writer, reader = (a, b) if step % 2 == 0 else (b, a)
            saved = writer.put(
                "/api/v1/threads/shared/state/", json={"agent_id": "x", "state": {"step": step}}
            )
            assert saved.status_code == 201, saved.text
            head = reader.get("/api/v1/threads/shared/state/")  # cached there since the previous step
            assert (head.json()["checkpoint_id"], head.json()["state"]) == (
                saved.json()["checkpoint_id"],
                {"step": step},
            )


def test_a_keys_rate_is_counted_once_across_instances(deployment: Deployment) -> None:
    a, b = _both(deployment, deployment.stack.api_key("rates", scopes="read", throttle_rate="6/min"))
    with a, b:
        answers = [(a if i % 2 == 0 else b).get("/api/v1/checkpoints/") for i in range(9)]
    assert [response.status_code for response in answers] == [200] * 6 + [429] * 3
    assert {response.json()["error"]["code"] for response in answers[6:]} == {"throttled"}


def test_a_revoked_key_fails_on_both_instances_at_once(deployment: Deployment) -> None:
    secret = deployment.stack.api_key("revoked", scopes="read")
    a, b = deployment.web
    headers = {"Authorization": f"Bearer {secret}"}

    def statuses() -> set[int]:
        # Fresh connections: every worker process of both instances serves some, and remembers the key.
        return {
            httpx.get(f"{web.url}/api/v1/checkpoints/", headers=headers).status_code for web in (a, b) * 12
        }

    assert statuses() == {200}
    deployment.stack.manage(
        "shell",
        "-c",
        "from checkpoints.models import ApiKey\n"
        "from checkpoints.services.audit import Actor\n"
        "from checkpoints.services.workspaces import api_key_revoke\n"
        f"api_key_revoke(api_key=ApiKey.objects.get(prefix={secret.split('_')[1]!r}), actor=Actor.system())",
    )
    assert statuses() == {401}


def _sign_in(web: Gunicorn, username: str, password: str) -> httpx.Response:
    """One sign-in on /dashboard/login/ the way a browser does it: the form first, for the CSRF cookie and
    the form's token, then the POST with both."""
    with httpx.Client(base_url=web.url, timeout=30) as browser:
        form = browser.get("/dashboard/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert form.status_code == 200 and token, form.text
        # The cookie is Secure (production settings) and this is plain HTTP, so the jar would not send it.
        return browser.post(
            "/dashboard/login/",
            data={"csrfmiddlewaretoken": token[1], "username": username, "password": password},
            headers={"Cookie": f"csrftoken={form.cookies['csrftoken']}"},
        )


def test_a_sign_in_lock_taken_on_one_instance_holds_on_the_other(deployment: Deployment) -> None:
    deployment.stack.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User\n"
        f"User.objects.create_user('locked-out', password={PASSWORD!r}, is_staff=True)",
    )
    a, b = deployment.web
    assert _sign_in(b, "locked-out", PASSWORD).status_code == 302  # signed in: the password is right
    for _ in range(LOGIN_MAX_FAILURES):
        failed = _sign_in(a, "locked-out", "wrong")
        assert failed.status_code == 200 and "correct username and password" in failed.text
    refused = _sign_in(b, "locked-out", PASSWORD)
    assert refused.status_code == 200
    assert "Too many failed sign-ins for this account or from this address. Try again in" in refused.text


def _settled(client: httpx.Client, job_ids: list[str]) -> list[dict[str, Any]]:
    def fetch() -> list[dict[str, Any]]:
        return [client.get(f"/api/v1/jobs/{job_id}/").json() for job_id in job_ids]

    return wait_for(
        fetch, lambda jobs: all(job["status"] in ("succeeded", "failed") for job in jobs), what="jobs"
    )


def _at_once(*calls: Callable[[], httpx.Response]) -> list[httpx.Response]:
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def _swept_checkpoints(database_url: str) -> list[str]:
    """Every checkpoint any sweep (beat's or a job) reports having expired, as `thread/checkpoint`."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT details FROM checkpoints_auditevent WHERE action = 'retention.sweep'"
        ).fetchall()
    return [
        f"{ref['thread_id']}/{ref['checkpoint_id']}"
        for (details,) in rows
        for ref in details["checkpoints"]["expired"]
    ]


def test_jobs_sweeps_and_summaries_run_once_across_workers(deployment: Deployment) -> None:
    a, b = _both(deployment, deployment.stack.api_key("jobs", scopes="admin"))
    with a, b:
        # Checkpoints that expire in a second, then sweeps asked for on both instances at the moment they do,
        # while beat sends one every second.
        expiring = []
        for n in range(EXPIRING):
            saved = (a, b)[n % 2].post(
                f"/api/v1/threads/expiring-{n}/checkpoints/",
                json={"agent_id": "x", "state": {}, "ttl_seconds": 1},
            )
            expiring.append(f"expiring-{n}/{saved.json()['checkpoint_id']}")
        time.sleep(1.2)
        sweeps = _at_once(*(lambda c=c: c.post("/api/v1/retention/sweep/") for c in (a, b, a, b)))

        # A scoped thread with messages, summarised from both instances at once.
        assert (
            a.post("/api/v1/threads/", json={"thread_id": "talk", "scope": {"tags": ["ops"]}}).status_code
            == 201
        )
        messages = [{"role": "user", "content": f"We decided to ship step {n}."} for n in range(MESSAGES)]
        assert b.post("/api/v1/threads/talk/messages/", json={"messages": messages}).status_code == 201
        summaries = _at_once(*(lambda c=c: c.post("/api/v1/threads/talk/summarize/") for c in (a, b, a, b)))

        assert {response.status_code for response in sweeps + summaries} == {202}
        job_ids = [response.json()["job_id"] for response in sweeps + summaries]
        jobs = _settled(a, job_ids)
        assert [(job["status"], job["attempts"]) for job in jobs] == [("succeeded", 1)] * len(jobs)

        # Every checkpoint expired by exactly one sweep, whoever ran it.
        wait_for(
            lambda: sorted(_swept_checkpoints(deployment.stack.database_url)),
            lambda swept: swept == sorted(expiring),
            what="every expired checkpoint to be swept exactly once",
        )
        # Every message folded into the medallion by exactly one summary.
        results = [job["result"] for job in jobs[len(sweeps) :]]
        assert sum(result["messages_summarized"] for result in results) == MESSAGES
        assert {result["summarized_through_seq"] for result in results} == {MESSAGES}
        revisions = a.get(f"/api/v1/medallions/{results[0]['medallion_id']}/revisions/").json()["results"]
        assert len(revisions) == sum(result["revisions"] for result in results) > 0
        assert {revision["job_id"] for revision in revisions} <= set(job_ids[len(sweeps) :])

    # Each job's task ran once (one delivery, one worker), and both workers took part.
    with psycopg.connect(deployment.stack.database_url) as conn:
        task_ids = [
            task_id
            for (task_id,) in conn.execute(
                "SELECT celery_task_id FROM checkpoints_job WHERE job_id = ANY(%s)",
                [[uuid.UUID(j) for j in job_ids]],
            )
        ]
    logs = [deployment.log(name) for name in ("worker-1", "worker-2")]
    assert len(task_ids) == len(job_ids)
    assert [sum(log.count(f"[{task_id}] succeeded") for log in logs) for task_id in task_ids] == [1] * len(
        task_ids
    )
    finished = re.compile(r"Task checkpoints\.tasks\.\w+\[[0-9a-f-]+\] succeeded")
    assert all(finished.search(log) for log in logs), "a worker ran nothing"
