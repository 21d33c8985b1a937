"""On PostgreSQL, the hot checkpoint reads are index seeks: the SQL the API really runs for the head, a
timeline page, the workspace timeline and an agent's inbox is EXPLAINed over a few thousand analysed rows,
and must use its index and never scan the checkpoint table."""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from checkpoints.models import Checkpoint, PendingWrite, Thread
from checkpoints.services.checkpoint_reads import checkpoint_compute_checksum
from checkpoints.services.retention import expired_checkpoints, purgeable_tombstones
from tests.conftest import ApiClient
from tests.factories import WorkspaceFactory

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

TABLE = Checkpoint._meta.db_table


def _row(thread: Thread, n: int, namespace: str, now: Any) -> Checkpoint:
    row = Checkpoint(
        workspace=thread.workspace,
        thread=thread,
        namespace=namespace,
        checkpoint_id=f"{thread.thread_id}-{namespace or 'root'}-{n:05d}",
        agent_id=f"agent-{n % 7}",
        step_index=n,
        state=json.dumps({"n": n, "pad": "x" * 200}),
        context="{}",
        metadata=json.dumps({"k": n % 10}),
        handoff_target=f"agent-{n % 5}" if n % 40 == 0 else None,
        created_at=now,
        # Some expire, some already expired unswept, some are tombstones: the plans must hold with them.
        expires_at=now + timedelta(hours=1)
        if n % 3 == 0
        else (now - timedelta(hours=1) if n % 11 == 0 else None),
        expired_at=now - timedelta(hours=2) if n % 13 == 0 else None,
    )
    row.checksum = checkpoint_compute_checksum(row)
    return row


@pytest.fixture
def loaded(api: ApiClient) -> ApiClient:
    """About 7,300 checkpoints written interleaved, as concurrent agents write them. The queried workspace
    (acme) and its thread hold a small share of the table, as every tenant and thread does at scale: acme has
    a "big" thread (100 root + 50 "sub" checkpoints) and 10 small ones; two other workspaces hold 3,500 each.
    (When one thread or workspace holds most of the table, PostgreSQL may walk the primary key backwards
    instead: still an index scan, over the same rows.)"""
    now = timezone.now()
    big = Thread.objects.create(workspace=api.workspace, thread_id="big")
    streams: list[tuple[Thread, str, int]] = [(big, "", 100), (big, "sub", 50)]
    streams += [
        (Thread.objects.create(workspace=api.workspace, thread_id=f"small-{t}"), "", 10) for t in range(10)
    ]
    for slug in ("w2", "w3"):
        workspace = WorkspaceFactory.create(slug=slug)
        streams += [
            (Thread.objects.create(workspace=workspace, thread_id=f"t-{t}"), "", 100) for t in range(35)
        ]
    rows = [
        _row(thread, n, namespace, now)
        for n in range(max(count for _, _, count in streams))
        for thread, namespace, count in streams
        if n < count
    ]
    Checkpoint.objects.bulk_create(rows, batch_size=2000)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TABLE}")
        cursor.execute(f"ANALYZE {Thread._meta.db_table}")
    api.get("/api/v1/checkpoints/?limit=1")  # warm the key's last_used_at
    return api


def _page_query(api: ApiClient, url: str) -> str:
    """The SQL the request ran against the checkpoint table (the one ordering it: the ORM's, or a static
    statement's)."""
    with CaptureQueriesContext(connection) as captured:
        response = api.get(url)
    assert response.status_code == 200, response.content
    queries = [
        q["sql"]
        for q in captured.captured_queries
        if re.search(rf'FROM "?{TABLE}"? ', q["sql"]) and "ORDER BY" in q["sql"]
    ]
    assert len(queries) == 1, queries
    return queries[0]


def _plan(sql: str) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
        document = cursor.fetchone()[0]
    plan = document if isinstance(document, list) else json.loads(document)
    return plan[0]["Plan"]


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += _nodes(child)
    return found


def _checkpoint_indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [TABLE])
        return {row[0] for row in cursor.fetchall()}


def _assert_uses(sql: str, index: str, label: str) -> None:
    """The checkpoint table is read through `index` alone (an index scan, or a bitmap scan of it when the
    rest of a short thread is fetched at once), never scanned."""
    plan = _plan(sql)
    nodes = _nodes(plan)
    dump = json.dumps(plan, indent=1)
    assert any(node.get("Relation Name") == TABLE for node in nodes), dump
    assert not [n for n in nodes if n.get("Relation Name") == TABLE and n["Node Type"] == "Seq Scan"], dump
    used = {n["Index Name"] for n in nodes if n.get("Index Name") in _checkpoint_indexes()}
    assert used == {index}, dump
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        text = "\n".join(row[0] for row in cursor.fetchall())
    # The plans quoted in docs/design.md come from here (CAIRN_PRINT_PLANS=1 pytest -s ...).
    if os.environ.get("CAIRN_PRINT_PLANS"):
        print(f"\n--- {label}\n{sql}\n{text}")


@pytest.mark.parametrize(
    ("url", "index", "label"),
    [
        ("/api/v1/threads/big/state/", "checkpoint_head", "head (GET threads/big/state/)"),
        ("/api/v1/threads/big/checkpoints/", "checkpoint_thread_timeline", "timeline of every namespace"),
        ("/api/v1/checkpoints/", "checkpoint_ws_timeline", "workspace timeline (GET checkpoints/)"),
        (
            "/api/v1/checkpoints/?handoff_target=agent-2",
            "checkpoint_ws_inbox",
            "inbox (GET checkpoints/?handoff_target=agent-2)",
        ),
        (
            "/api/v1/checkpoints/?agent_id=agent-3",
            "checkpoint_ws_agent",
            "agent timeline (GET checkpoints/?agent_id=agent-3)",
        ),
    ],
    ids=["head", "thread-timeline", "workspace-timeline", "inbox", "agent"],
)
def test_each_read_uses_its_index(loaded: ApiClient, url: str, index: str, label: str) -> None:
    _assert_uses(_page_query(loaded, url), index, label)


def test_it_pages_a_namespace_timeline_with_the_head_index(loaded: ApiClient) -> None:
    first = _page_query(loaded, "/api/v1/threads/big/checkpoints/?namespace=")
    _assert_uses(first, "checkpoint_head", "timeline page 1 (GET threads/big/checkpoints/?namespace=)")
    next_url = loaded.get("/api/v1/threads/big/checkpoints/?namespace=").json()["next"]
    second = _page_query(loaded, next_url)
    _assert_uses(second, "checkpoint_head", "timeline page 2 (the `next` link)")


def test_a_checkpoint_by_its_public_id_uses_its_index(loaded: ApiClient) -> None:
    with CaptureQueriesContext(connection) as captured:
        response = loaded.get("/api/v1/checkpoints/big-root-00042/")
    assert response.status_code == 200, response.content
    assert response.json()["checkpoint_id"] == "big-root-00042"
    reads = [q["sql"] for q in captured.captured_queries if re.search(rf'FROM "?{TABLE}"? ', q["sql"])]
    assert reads, captured.captured_queries
    _assert_uses(reads[0], "checkpoint_ws_public_id", "by public id (GET checkpoints/big-root-00042/)")


def test_checkpoints_of_a_run_use_their_index(loaded: ApiClient) -> None:
    Checkpoint.objects.filter(thread__thread_id="big", step_index__lt=5).update(run_id="run-7")
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TABLE}")
    sql = _page_query(loaded, "/api/v1/checkpoints/?run_id=run-7")
    _assert_uses(sql, "checkpoint_ws_run", "a run's checkpoints (GET checkpoints/?run_id=run-7)")


def test_a_writers_checkpoints_walk_the_workspace_timeline(loaded: ApiClient) -> None:
    # checkpoint_ws_writer is gone (docs/storage.md, "Indexes"): the filter reads the workspace's rows
    # through one of its indexes, never the whole table.
    sql = _page_query(loaded, "/api/v1/checkpoints/?written_by=key:abc")
    nodes = _nodes(_plan(sql))
    assert not [n for n in nodes if n.get("Relation Name") == TABLE and n["Node Type"] == "Seq Scan"], nodes
    used = {n["Index Name"] for n in nodes if n.get("Index Name") in _checkpoint_indexes()}
    assert used and used <= {"checkpoint_ws_timeline", "checkpoint_ws_created"}, nodes


def test_a_checkpoints_writes_are_read_through_their_unique_index(loaded: ApiClient) -> None:
    thread = Thread.objects.get(workspace=loaded.workspace, thread_id="big")
    PendingWrite.objects.bulk_create(
        PendingWrite(
            thread=thread, checkpoint_id=f"big-root-{n % 100:05d}", task_id=f"task-{n}", idx=0,
            channel="messages", value="{}",
        )
        for n in range(3000)
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {PendingWrite._meta.db_table}")
    with CaptureQueriesContext(connection) as captured:
        response = loaded.get("/api/v1/threads/big/checkpoints/big-root-00042/writes/")
    assert response.status_code == 200, response.content
    writes_table = PendingWrite._meta.db_table
    reads = [q["sql"] for q in captured.captured_queries if re.search(rf'FROM "?{writes_table}"? ', q["sql"])]
    assert reads, captured.captured_queries
    nodes = _nodes(_plan(reads[0]))
    assert not [n for n in nodes if n.get("Relation Name") == writes_table and n["Node Type"] == "Seq Scan"]
    assert {n["Index Name"] for n in nodes if "Index Name" in n} == {"pending_write_unique"}, nodes


def _queryset_indexes(queryset: Any) -> set[str]:
    """The checkpoint indexes a queryset's plan reads; it never scans the table."""
    nodes = _nodes(json.loads(queryset.explain(format="json"))[0]["Plan"])
    assert not [n for n in nodes if n.get("Relation Name") == TABLE and n["Node Type"] == "Seq Scan"], nodes
    return {n["Index Name"] for n in nodes if n.get("Index Name") in _checkpoint_indexes()}


def test_the_expiry_sweep_finds_due_checkpoints_through_the_expiring_index(loaded: ApiClient) -> None:
    due = expired_checkpoints(now=timezone.now()).order_by("id")[:500]
    assert _queryset_indexes(due) == {"checkpoint_expiring"}


def test_the_purge_finds_old_tombstones_through_a_tombstone_index(loaded: ApiClient) -> None:
    workspace = loaded.workspace
    workspace.tombstone_retention_seconds = 3600
    old = purgeable_tombstones(workspace=workspace, now=timezone.now()).order_by("id")[:500]
    assert _queryset_indexes(old) & {"checkpoint_ws_expired", "checkpoint_tombstones"}
