"""The "web side" of the real-worker tests, run as its own process against the stack's database and broker:
`python -m tests.jobs.driver` reads one JSON command per line on stdin and answers one JSON line on stdout.

It submits jobs through the real services (so they are published after commit, exactly as the API does),
publishes raw duplicate deliveries, writes store items and medallions (whose embedding may be a task), and
reads back job, checkpoint, audit and vector rows for the test to check.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django

django.setup()  # before any model import below

from django.db import transaction  # noqa: E402

from checkpoints.models import AuditEvent, Checkpoint, Job, Medallion, StoreItem  # noqa: E402
from checkpoints.services.audit import Actor  # noqa: E402
from checkpoints.services.jobs import job_submit  # noqa: E402
from checkpoints.services.medallions import medallion_checkpoint_submit, medallion_create  # noqa: E402
from checkpoints.services.retention import retention_sweep_submit  # noqa: E402
from checkpoints.services.store import store_put  # noqa: E402
from checkpoints.services.workspaces import workspace_get_or_create  # noqa: E402
from project.celery import app  # noqa: E402
from tests.factories import make_checkpoint  # noqa: E402
from tests.jobs import worker_tasks  # noqa: E402
from tests.llm.sessions import evidence  # noqa: E402


def setup(expiring_ttl_seconds: int) -> dict[str, Any]:
    w1, _ = workspace_get_or_create(slug="w1")
    w2, _ = workspace_get_or_create(slug="w2")
    expiring = make_checkpoint(w1, "expiring", ttl_seconds=expiring_ttl_seconds, state={"secret": "payload"})
    kept = make_checkpoint(w1, "kept", state={"n": 1})
    make_checkpoint(w2, "w2-thread", state={"n": 2})
    return {"expiring_pk": expiring.pk, "kept_pk": kept.pk}


def submit(task: str, params: dict[str, Any]) -> dict[str, Any]:
    workspace, _ = workspace_get_or_create(slug="w1")
    with transaction.atomic():  # like a request: the job row commits, then the message is published
        job = job_submit(
            workspace=workspace, kind=Job.Kind.SUMMARIZE, params=params, task=getattr(worker_tasks, task).name
        )
    return {"pk": job.pk, "job_id": str(job.job_id)}


def submit_sweep(workspace: str) -> dict[str, Any]:
    target, _ = workspace_get_or_create(slug=workspace)
    job = retention_sweep_submit(workspace=target, actor=Actor.system("driver"))
    return {"pk": job.pk, "job_id": str(job.job_id)}


def submit_session(transcripts: int, sentences_each: list[int]) -> dict[str, Any]:
    """A checkpoint_session job (the extractive summariser) over a generated session."""
    workspace, _ = workspace_get_or_create(slug="w1")
    with transaction.atomic():
        job = medallion_checkpoint_submit(
            workspace=workspace,
            scope={"graph_nodes": ["repo:billing"], "tags": ["refactor"]},
            evidence=evidence(transcripts, sentences_each=tuple(sentences_each)),
            actor=Actor.system("driver"),
        )
    return {"pk": job.pk, "job_id": str(job.job_id)}


def publish(task: str, job_pk: int) -> dict[str, Any]:
    """A second message for the same job: what a broker redelivery looks like to the worker."""
    return {"task_id": app.send_task(task, args=(job_pk,)).id}


def jobs() -> dict[str, Any]:
    return {
        str(job.pk): {
            "status": job.status,
            "attempts": job.attempts,
            "error": job.error,
            "result": job.result,
        }
        for job in Job.objects.order_by("pk")
    }


def checkpoint(pk: int) -> dict[str, Any]:
    row = Checkpoint.objects.get(pk=pk)
    return {
        "state": row.state,
        "expired_at": row.expired_at.isoformat() if row.expired_at else None,
        "checksum": row.checksum,
    }


def audit(action: str) -> list[dict[str, Any]]:
    return [
        {"workspace": e.workspace.slug, "actor_label": e.actor_label, "details": e.details}
        for e in AuditEvent.objects.filter(action=action).select_related("workspace").order_by("id")
    ]


def store_put_item(key: str, text: str) -> dict[str, Any]:
    """A store put as the API makes it (its embedding task, if any, is published after commit)."""
    workspace, _ = workspace_get_or_create(slug="w1")
    store_put(
        workspace=workspace, actor=Actor.system("driver"), namespace=["notes"], key=key, value={"text": text}
    )
    return {}


def medallion_write(tag: str, text: str) -> dict[str, Any]:
    """An agent-written medallion, as `POST medallions/` stores it."""
    workspace, _ = workspace_get_or_create(slug="w1")
    document = {"scope": {"graph_nodes": ["repo:x"], "tags": [tag]}, "summary": {"high_level": text}}
    medallion = medallion_create(workspace=workspace, document=document, actor=Actor.system("driver"))
    return {"pk": medallion.pk}


def embedded() -> dict[str, Any]:
    """Which store items and medallions have vectors."""
    return {
        "items": {
            key: vectors is not None for key, vectors in StoreItem.objects.values_list("key", "vectors")
        },
        "medallions": {
            str(pk): vector is not None for pk, vector in Medallion.objects.values_list("pk", "vector")
        },
    }


COMMANDS: dict[str, Callable[..., Any]] = {
    "setup": setup,
    "submit": submit,
    "submit_sweep": submit_sweep,
    "submit_session": submit_session,
    "publish": publish,
    "jobs": jobs,
    "checkpoint": checkpoint,
    "audit": audit,
    "store_put_item": store_put_item,
    "medallion_write": medallion_write,
    "embedded": embedded,
}


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer: Any = {"ok": COMMANDS[request.pop("cmd")](**request)}
        except Exception as exc:  # reported to the test, which fails with it
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
