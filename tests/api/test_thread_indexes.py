"""On PostgreSQL each thread index pays its way (docs/storage.md, "Indexes"): the query that needs it is
EXPLAINed over a few thousand analysed threads and reads through it; and a save rewrites the thread row
as a HOT update, which no index holding `updated_at` would allow."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from checkpoints.models import Thread, Workspace
from checkpoints.services.idle_expiry import idle_threads
from tests.conftest import ApiClient
from tests.dashboard.plans import plan_nodes
from tests.factories import WorkspaceFactory

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

TABLE = Thread._meta.db_table


def _threads(workspace: Workspace, count: int) -> list[Thread]:
    now = timezone.now()
    return [
        Thread(
            workspace=workspace,
            thread_id=f"{workspace.slug}-conversation-{n:05d}",
            user_id=f"user-{n % 300}",
            name=f"Order {n} {('refund', 'delivery', 'login', 'invoice')[n % 4]} question",
            tags=[f"tag-{n % 50}"],
            created_at=now - timedelta(minutes=n),
            updated_at=now - timedelta(minutes=n % 97),
            expires_at=now + timedelta(hours=n % 500) if n % 5 == 0 else None,
        )
        for n in range(count)
    ]


@pytest.fixture
def loaded(api: ApiClient) -> ApiClient:
    """3,000 threads in the key's workspace and 3,000 in each of two others, analysed."""
    rows = _threads(api.workspace, 3000)
    for slug in ("w2", "w3"):
        rows += _threads(WorkspaceFactory.create(slug=slug), 3000)
    Thread.objects.bulk_create(rows, batch_size=2000)
    source = Thread.objects.get(workspace=api.workspace, thread_id=f"{api.workspace.slug}-conversation-00007")
    Thread.objects.filter(pk__in=[row.pk for row in rows[10:13]]).update(forked_from=source)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TABLE}")
    return api


def _thread_queries(api: ApiClient, url: str) -> list[str]:
    """The SQL statements the request ran that read the thread table."""
    with CaptureQueriesContext(connection) as captured:
        response = api.get(url)
    assert response.status_code == 200, response.content
    return [q["sql"] for q in captured.captured_queries if re.search(rf'FROM "?{TABLE}"? ', q["sql"])]


def _explain(sql: str) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
        document = cursor.fetchone()[0]
    return document if isinstance(document, list) else json.loads(document)


def _thread_indexes_used(document: Any) -> set[str]:
    """The thread indexes a plan reads; it must never scan the whole table."""
    nodes = plan_nodes(document)
    on_threads = [node for node in nodes if node.get("Relation Name") == TABLE]
    assert on_threads, nodes
    assert not [node for node in on_threads if node["Node Type"] == "Seq Scan"], json.dumps(nodes, indent=1)
    return {
        node["Index Name"] for node in nodes if str(node.get("Index Name", "")).startswith(("thread", TABLE))
    }


@pytest.mark.parametrize(
    ("url", "index"),
    [
        ("/api/v1/threads/{slug}-conversation-00042/", "thread_unique_id"),
        ("/api/v1/threads/?user_id=user-17", "thread_ws_user"),
        ("/api/v1/threads/?ordering=-created_at", "thread_ws_created"),
        ("/api/v1/threads/?tag=tag-7", "thread_tags_gin"),
        ("/api/v1/threads/?q=xyzzy", "thread_name_trgm"),
    ],
    ids=["by-id", "a-users-threads", "newest-created", "by-tag", "name-contains"],
)
def test_each_thread_read_uses_its_index(loaded: ApiClient, url: str, index: str) -> None:
    queries = _thread_queries(loaded, url.format(slug=loaded.workspace.slug))
    used = set().union(*(_thread_indexes_used(_explain(sql)) for sql in queries))
    assert index in used, (queries, used)


def test_the_idle_sweep_finds_expired_threads_through_the_expiring_index() -> None:
    workspace = WorkspaceFactory.create(slug="sweep")
    Thread.objects.bulk_create(_threads(workspace, 6000), batch_size=2000)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TABLE}")
    used = _thread_indexes_used(json.loads(idle_threads(now=timezone.now()).explain(format="json")))
    assert used == {"thread_expiring"}, used


def test_the_forks_of_a_thread_are_found_through_the_forked_from_index(loaded: ApiClient) -> None:
    source = Thread.objects.get(thread_id=f"{loaded.workspace.slug}-conversation-00007")
    forks = Thread.objects.filter(forked_from=source).order_by("id")[:200]
    assert len(forks) == 3
    used = _thread_indexes_used(json.loads(forks.explain(format="json")))
    assert any(name.startswith(f"{TABLE}_forked_from_id_") for name in used), used


def _thread_updates() -> tuple[int, int]:
    """Updates and HOT updates of the thread table in this test's transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = %s", [TABLE]
        )
        row = cursor.fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def test_a_save_rewrites_the_thread_row_as_a_hot_update(api: ApiClient) -> None:
    url = "/api/v1/threads/hot/checkpoints/"
    first = api.post(url, {"agent_id": "a", "state": {"n": 0}})
    assert first.status_code == 201, first.content
    updates, hot = _thread_updates()
    parent = first.json()["checkpoint_id"]
    # Ten: inside the test's one transaction no old version can be pruned, so the page must hold them all.
    for n in range(1, 11):
        response = api.post(url, {"agent_id": "a", "state": {"n": n}, "parent_id": parent})
        assert response.status_code == 201, response.content
        parent = response.json()["checkpoint_id"]
    after_updates, after_hot = _thread_updates()
    # Each save touched the row (updated_at, state_version) and none of those changes was indexed.
    assert after_updates - updates >= 10
    assert after_hot - hot == after_updates - updates
    thread = Thread.objects.get(workspace=api.workspace, thread_id="hot")
    assert thread.state_version >= 11


def test_the_thread_table_leaves_room_for_hot_updates() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [TABLE])
        options = cursor.fetchone()[0]
    assert "fillfactor=70" in options


def test_the_storage_page_lists_every_index_with_its_query() -> None:
    tables = (
        "checkpoints_thread",
        "checkpoints_checkpoint",
        "checkpoints_pendingwrite",
        "checkpoints_message",
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = ANY(%s)", [list(tables)])
        indexes = {row[0] for row in cursor.fetchall()}
    page = (Path(__file__).resolve().parents[2] / "docs" / "storage.md").read_text()
    rows = [line.split("|") for line in page.splitlines() if line.startswith("| ")]
    listed = {name for row in rows[1:] for name in re.findall(r"`([a-z_]+)(?:…)?`", row[2])}
    # The foreign key's index is named by Django with a hash: the page gives its prefix.
    assert {next((n for n in listed if index.startswith(n)), index) for index in indexes} == listed
