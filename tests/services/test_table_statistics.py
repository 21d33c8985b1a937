"""Planner statistics kept fresh by the web processes (docs/performance.md): a table that changed enough is
analyzed, once, and a restore then seeks the index made for it."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection

from checkpoints.models import Checkpoint, Workspace
from checkpoints.services import hot_sql, table_statistics
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CHECKPOINTS = Checkpoint._meta.db_table
LOCK = table_statistics._LOCK_KEY


@pytest.fixture(autouse=True)
def fresh_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_statistics, "_next_check", 0.0)
    cache.delete(LOCK)


def flush_statistics() -> None:
    """Publish this connection's table counters now (PostgreSQL does so at most once a second)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")


def last_analyzed(table: str) -> Any:
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = %s", [table])
        return cursor.fetchone()[0]


def test_a_table_changed_by_more_than_a_tenth_is_analyzed_and_then_left_alone(workspace: Workspace) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {CHECKPOINTS}")  # empty now, whatever earlier tests left in its statistics
    for n in range(120):
        make_checkpoint(workspace, "t", state={"n": n})
    flush_statistics()
    assert CHECKPOINTS in table_statistics.analyze_stale_tables()
    first = last_analyzed(CHECKPOINTS)
    assert first is not None
    make_checkpoint(workspace, "t", state={"n": "one more"})
    flush_statistics()
    assert CHECKPOINTS not in table_statistics.analyze_stale_tables()
    assert last_analyzed(CHECKPOINTS) == first


def test_once_analyzed_a_restore_seeks_the_public_id_index(workspace: Workspace) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {CHECKPOINTS}")
    for n in range(300):
        make_checkpoint(workspace, f"t{n % 3}", state={"n": n}, written_by=f"key:{n % 2}")
    wanted = make_checkpoint(workspace, "t1", state={"n": "wanted"})
    flush_statistics()
    table_statistics.analyze_stale_tables()
    sql = hot_sql.checkpoint_in_thread_sql("postgresql", in_namespace=False)
    params: dict[str, Any] = {
        "workspace": workspace.pk,
        "thread_id": "t1",
        "checkpoint_id": wanted.checkpoint_id,
    }
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "checkpoint_ws_public_id" in plan, plan


def test_every_api_request_schedules_one_check_per_interval(api: ApiClient) -> None:
    assert api.get("/api/v1/threads/").status_code == 200
    assert cache.get(LOCK) == 1  # checked after the response, and claimed for every process
    cache.delete(LOCK)
    response = api.post("/api/v1/threads/t/checkpoints/", {"agent_id": "a", "state": {}})
    assert response.status_code == 201
    assert cache.get(LOCK) is None  # this process checks again only after CHECK_SECONDS


def test_writes_followed_only_by_reads_are_analyzed_by_a_read(
    api: ApiClient, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {CHECKPOINTS}")
    first = last_analyzed(CHECKPOINTS)
    saved = [make_checkpoint(workspace, "burst", state={"n": n}) for n in range(120)]
    flush_statistics()
    monkeypatch.setattr(table_statistics, "_next_check", 0.0)  # the interval since the burst has passed
    cache.delete(LOCK)

    response = api.get(f"/api/v1/threads/burst/checkpoints/{saved[-1].checkpoint_id}/")

    assert response.status_code == 200 and response.json()["state"] == {"n": 119}
    assert last_analyzed(CHECKPOINTS) != first  # analyzed after the read's response
