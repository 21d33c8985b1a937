"""Medallion test helpers: stored medallions with chosen scopes and times, and jobs run in-process.

Imported by tests/medallions/conftest.py and by the API tests of medallions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from checkpoints import medallion_schema as schema
from checkpoints.models import Job, Medallion, Workspace
from checkpoints.services.jobs import job_execute
from checkpoints.services.medallion_store import scope_fields
from checkpoints.services.medallions import medallion_checkpoint

MakeMedallion = Callable[..., Medallion]

# Summaries of three unrelated subjects, by subject: what the searches by meaning rank.
UNRELATED_SUBJECTS = {
    "dogs": "Dogs and puppies: feeding the pets, walking the dog in the park.",
    "tax": "Income tax returns, invoices and the accountant's deadlines.",
    "rockets": "Rocket engines, orbital launches and spacecraft telemetry.",
}


def medallion_row(
    workspace: Workspace,
    graph_nodes: list[str],
    tags: list[str],
    *,
    updated_at: datetime | None = None,
    status: str = Medallion.Status.ACTIVE,
    high_level: str = "A medallion.",
) -> Medallion:
    """An unsaved Medallion row with a normalised scope (for bulk_create)."""
    scope = schema.MedallionScope(graph_nodes=graph_nodes, tags=tags)
    when = updated_at or timezone.now()
    return Medallion(
        workspace=workspace,
        **scope_fields(scope),
        status=status,
        high_level=high_level,
        created_at=when,
        updated_at=when,
    )


@pytest.fixture
def make_medallion(workspace: Workspace) -> MakeMedallion:
    def make(graph_nodes: list[str], tags: list[str], **kwargs: Any) -> Medallion:
        row = medallion_row(kwargs.pop("workspace", workspace), graph_nodes, tags, **kwargs)
        row.save()
        return row

    return make


@pytest.fixture
def eager(settings: Any) -> Iterator[None]:
    """Job tasks run in-process when published (the broker is not what these tests test).

    Celery reads the Django setting on every access, unless a value was written to `app.conf` (it then
    shadows the setting for good): such a pin is lifted for the test and put back exactly as it was."""
    from project.celery import app

    app.conf.task_always_eager  # noqa: B018  (loads the configuration, so its layers exist)
    layers = app.conf.maps
    assert layers is not None
    changes = layers[0]  # the layer values written to app.conf land in
    assert isinstance(changes, dict)
    pinned = changes.pop("task_always_eager") if "task_always_eager" in changes else _UNSET
    settings.CELERY_TASK_ALWAYS_EAGER = True
    try:
        yield
    finally:
        if pinned is not _UNSET:
            changes["task_always_eager"] = pinned


_UNSET = object()


def result_of(job: Job) -> dict[str, Any]:
    """A finished job's result (a JSON object)."""
    assert isinstance(job.result, dict), (job.status, job.error)
    return job.result


def checkpoint_job(
    workspace: Workspace, scope: dict[str, Any], evidence: dict[str, Any], thread_id: str | None = None
) -> Job:
    """Run checkpoint_session as a job, through job_execute (what the Celery task does); the finished job."""
    job = Job.objects.create(
        workspace=workspace,
        kind=Job.Kind.SUMMARIZE,
        params={"operation": "checkpoint", "scope": scope, "evidence": evidence, "thread_id": thread_id},
    )
    finished = job_execute(job.pk, medallion_checkpoint)
    assert finished is not None
    return finished
