"""On PostgreSQL the overview's chart queries and the audit log's agent filter read through their indexes
(checkpoint_ws_created, job_ws_created, message_created, audit_agent_ws), never a scan of the table, over
tens of thousands of analysed rows spread over months in several workspaces."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import QuerySet, Sum
from django.utils import timezone

from checkpoints.dashboard.activity import WINDOWS, bucket_rows
from checkpoints.models import AuditEvent, AuditEventAgent, Checkpoint, Job, Message, Workspace
from tests.dashboard.plans import plan_nodes, threads_in_three_workspaces
from tests.factories import WorkspaceFactory

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

TABLES = ("checkpoints_checkpoint", "checkpoints_message", "checkpoints_job", "checkpoints_auditeventagent")


@pytest.fixture(scope="module")
def loaded(rows_shared_by_module: None) -> Workspace:
    """Three workspaces of 30 threads of 100 checkpoints and 100 messages, one created every 30 hours
    (about 9,000 of each over four months; a third of the checkpoints expired five hours after), plus jobs
    and audit events naming agents."""
    workspace = WorkspaceFactory.create(slug="acme")
    now = timezone.now()
    checkpoints: list[Checkpoint] = []
    messages: list[Message] = []
    jobs: list[Job] = []
    for t, thread in threads_in_three_workspaces(workspace, 30):
        ws = thread.workspace
        for n in range(100):
            when = now - timedelta(hours=30 * n + t)
            checkpoints.append(
                Checkpoint(
                    workspace=ws, thread=thread, checkpoint_id=f"c-{n}", agent_id=f"agent-{n % 9}",
                    state="{}", context="{}", metadata="{}", checksum="x" * 64, size_bytes=100 + n,
                    created_at=when, expired_at=when + timedelta(hours=5) if n % 3 == 0 else None,
                )
            )  # fmt: skip
            messages.append(
                Message(thread=thread, seq=n + 1, message_id=f"m-{n}", role="user", created_at=when)
            )
        jobs += [
            Job(workspace=ws, kind=Job.Kind.SUMMARIZE, params={}, created_at=now - timedelta(hours=30 * n))
            for n in range(100)
        ]
    Checkpoint.objects.bulk_create(checkpoints, batch_size=2000)
    Message.objects.bulk_create(messages, batch_size=2000)
    Job.objects.bulk_create(jobs, batch_size=2000)
    events = AuditEvent.objects.bulk_create(
        AuditEvent(workspace=workspace, actor_type="system", actor_label="t", action="checkpoint.handoff")
        for _ in range(3000)
    )
    AuditEventAgent.objects.bulk_create(
        AuditEventAgent(event=event, workspace=workspace, agent_id=f"agent-{i % 50}")
        for i, event in enumerate(events)
    )
    with connection.cursor() as cursor:
        for table in (*TABLES, "checkpoints_thread", "checkpoints_auditevent"):
            cursor.execute(f"ANALYZE {table}")
    return workspace


def _assert_indexed(queryset: QuerySet[Any], *indexes: str) -> None:
    """The plan uses one of `indexes` and scans none of TABLES."""
    plan = json.loads(queryset.explain(format="json"))
    text = json.dumps(plan)
    assert any(index in text for index in indexes), text
    scanned = {node.get("Relation Name") for node in plan_nodes(plan) if node.get("Node Type") == "Seq Scan"}
    assert not scanned & set(TABLES), text


@pytest.mark.parametrize("window", ["48h", "30d"])
def test_the_activity_series_read_their_window_through_an_index(loaded: Workspace, window: str) -> None:
    now = timezone.now()
    chosen = WINDOWS[window]
    _assert_indexed(
        bucket_rows(Checkpoint.objects.for_workspace(loaded), chosen, now), "checkpoint_ws_created"
    )
    # Jobs are few: over a month the planner may take any of the workspace's job indexes instead.
    _assert_indexed(
        bucket_rows(Job.objects.for_workspace(loaded), chosen, now),
        "job_ws_created",
        "job_ws_newest",
        "checkpoints_job_workspace_id",
    )
    with connection.cursor() as cursor:
        # Over 30 days the window holds every loaded message: since the thread indexes lost updated_at
        # (docs/storage.md, "Indexes") the planner costs a scan a hair cheaper at this size; forbid it to see
        # that the window can be read through its index, as the search index tests do.
        cursor.execute("SET LOCAL enable_seqscan = off")
    _assert_indexed(bucket_rows(Message.objects.for_workspace(loaded), chosen, now), "message_created")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = on")
    written = bucket_rows(Checkpoint.objects.for_workspace(loaded), WINDOWS["30d"], now, Sum("size_bytes"))
    _assert_indexed(written, "checkpoint_ws_created")
    tombstones = Checkpoint.objects.for_workspace(loaded).tombstones()
    erased = bucket_rows(tombstones, WINDOWS["30d"], now, Sum("size_bytes"), when="expired_at")
    _assert_indexed(erased, "checkpoint_ws_expired")


def test_the_audit_agent_filter_reads_through_its_index(loaded: Workspace) -> None:
    events = AuditEvent.objects.for_workspace(loaded).naming_agent("agent-7").newest_first()[:51]
    _assert_indexed(events, "audit_agent_ws")
