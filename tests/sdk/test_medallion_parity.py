"""medallion parity against a live server: checkpoint_session (create, then update the exact scope only) and
load_medallions_for_scope (subset nodes, overlapping tags, complete, newest first), sync and async."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest

from checkpoints.models import Job
from checkpoints.sdk import AsyncClient, Client, JobFailed
from checkpoints.sdk.medallion import (
    Evidence,
    MedallionScope,
    _checkpoint_session_async,
    acheckpoint_session,
    aload_medallions_for_scope,
    checkpoint_session,
    load_medallions_for_scope,
)
from checkpoints.tasks import medallion_checkpoint_job
from tests.medallions.fixtures import eager  # noqa: F401  (fixture: jobs run when published)
from tests.sdk.conftest import OneRequestAtATime

SCOPE = MedallionScope(graph_nodes=["repo:muse", "module:cli"], tags=["project_state", "refactor"])
FIRST = Evidence(
    session_summary=(
        "Implemented CLI routing. We decided to use argparse subcommands. Should plugins load lazily?"
    ),
    transcripts=["User requested help command", "System showed help menu"],
    artefacts={"commands": ["help", "start", "stop"]},
)
LATER = Evidence(session_summary="Added error handling. We decided plugins load lazily, via entry points.")


@pytest.mark.usefixtures("eager")
def test_it_creates_then_updates_the_medallion_of_exactly_that_scope(client: Client) -> None:
    created = checkpoint_session(client, None, SCOPE, FIRST, thread_id=None)
    assert created.meta.version == 1 and created.summary.high_level
    updated = checkpoint_session(client, None, SCOPE, LATER)
    assert updated.meta.medallion_id == created.meta.medallion_id and updated.meta.version == 2
    assert len(updated.decisions) >= 2  # the update merged the new evidence

    narrower = MedallionScope(graph_nodes=["repo:muse"], tags=["project_state"])
    other = checkpoint_session(
        client, None, narrower, Evidence(session_summary="Only the repo, not the CLI.")
    )
    assert other.meta.medallion_id != created.meta.medallion_id  # never the broader scope's medallion
    assert client.medallion_get(created.meta.medallion_id).meta.version == 2
    revisions = client.medallion_revisions(created.meta.medallion_id)
    assert [r.version for r in revisions] == [2, 1] and revisions.results[1].evidence is not None


@pytest.mark.usefixtures("eager")
def test_it_loads_every_medallion_of_a_scope_newest_first(client: Client) -> None:
    broad = checkpoint_session(client, None, SCOPE, FIRST)
    repo_only = checkpoint_session(
        client,
        None,
        MedallionScope(graph_nodes=["repo:muse"], tags=["docs"]),
        Evidence(session_summary="Docs."),
    )
    checkpoint_session(
        client,
        None,
        MedallionScope(graph_nodes=["repo:other"], tags=["refactor"]),
        Evidence(session_summary="Other repo."),
    )

    found = load_medallions_for_scope(
        client, MedallionScope(graph_nodes=["repo:muse"], tags=["refactor", "docs"])
    )
    assert [m.meta.medallion_id for m in found] == [repo_only.meta.medallion_id, broad.meta.medallion_id]
    [only] = load_medallions_for_scope(
        client, MedallionScope(graph_nodes=["repo:muse", "module:cli"]), limit=5
    )
    assert only.to_dict() == client.medallion_get(broad.meta.medallion_id).to_dict()
    assert len(load_medallions_for_scope(client, MedallionScope(tags=["refactor"]), limit=1)) == 1
    with pytest.raises(ValueError, match="empty"):
        load_medallions_for_scope(client, MedallionScope())  # the seed returned everything
    with pytest.raises(ValueError, match="limit"):
        load_medallions_for_scope(client, SCOPE, limit=0)


@pytest.mark.usefixtures("eager")
def test_it_has_async_twins_under_both_names(cairn_url: str, cairn_key: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(cairn_url, cairn_key) as cairn:
            created = await acheckpoint_session(cairn, None, SCOPE, FIRST)
            again = await _checkpoint_session_async(cairn, None, SCOPE, LATER)
            assert again.meta.medallion_id == created.meta.medallion_id and again.meta.version == 2
            loaded = await aload_medallions_for_scope(cairn, MedallionScope(tags=["refactor"]))
            assert [m.meta.medallion_id for m in loaded] == [created.meta.medallion_id]

    asyncio.run(scenario())


def _server_lock(live_server: Any) -> AbstractContextManager[Any]:
    app = live_server.thread.httpd.get_app()
    return app.lock if isinstance(app, OneRequestAtATime) else nullcontext()


@pytest.fixture
def no_eager(settings: Any) -> None:
    """Jobs wait in the broker for a worker (set through the Django setting, never `app.conf`, which would
    shadow the setting for every later test)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False


@pytest.mark.usefixtures("no_eager")
def test_it_waits_for_a_job_a_worker_finishes_later(client: Client, live_server: Any) -> None:
    """The job is still queued when the server answers: the SDK gets 202 with the job, polls it, and
    returns the medallion once a worker (here: the real task, run by the test) has done it."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(checkpoint_session, client, None, SCOPE, FIRST, timeout=45.0, wait=0)
        deadline = time.monotonic() + 40
        while not Job.objects.filter(kind=Job.Kind.SUMMARIZE, status=Job.Status.QUEUED).exists():
            assert time.monotonic() < deadline and not pending.done()
            time.sleep(0.2)
        job = Job.objects.get(kind=Job.Kind.SUMMARIZE)
        with _server_lock(live_server):  # the in-memory SQLite connection is shared with the server
            medallion_checkpoint_job.apply(args=[job.pk])
        medallion = pending.result(timeout=60)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    assert isinstance(job.result, dict)
    assert medallion.meta.medallion_id == job.result["medallion_id"] and medallion.meta.version == 1


@pytest.mark.usefixtures("eager")
def test_it_reports_a_failed_job(client: Client, settings: Any) -> None:
    settings.CAIRN_LLM = {**settings.CAIRN_LLM, "PROVIDER": "openai", "BASE_URL": "http://127.0.0.1:9/v1"}
    settings.CAIRN_LLM.update(TIMEOUT_SECONDS=0.2, MAX_ATTEMPTS=1)
    with pytest.raises(JobFailed) as failed:
        checkpoint_session(client, None, SCOPE, FIRST)
    assert failed.value.details["job"]["status"] == "failed"
