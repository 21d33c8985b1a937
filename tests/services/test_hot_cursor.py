"""`hot_cursor.cursor` keeps one prepared cursor per connection of each thread and uses it again; it is still
Django's wrapping (errors mapped, execute wrappers run), and a new connection or thread gets its own. It
loads timestamps with psycopg's own loader only where that gives what Django's gives."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from checkpoints.models import Workspace
from checkpoints.storage import hot_cursor

pytestmark = pytest.mark.postgres


def one(sql: str, params: list[Any] | None = None) -> tuple[Any, Any]:
    """Run `sql` on the hot cursor; its first row and the psycopg cursor that ran it."""
    with hot_cursor.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone(), cursor.cursor


@pytest.mark.django_db
def test_statements_on_one_connection_share_one_open_prepared_cursor() -> None:
    (first, _), (second, raw) = one("SELECT %s::int", [1]), one("SELECT %s::text", ["x"])
    assert (first, second) == ((1,), ("x",))
    assert one("SELECT 1")[1] is raw and not raw.closed
    assert type(raw).__name__ == "PreparedCursor"
    assert raw.connection is connection.connection


@pytest.mark.django_db(transaction=True)
def test_a_new_connection_gets_a_new_cursor() -> None:
    _, before = one("SELECT 1")
    connection.close()
    row, after = one("SELECT 2")
    assert row == (2,) and after is not before
    assert after.connection is connection.connection and before.connection.closed


@pytest.mark.django_db
def test_errors_are_djangos_and_the_cursor_serves_on() -> None:
    Workspace.objects.create(slug="taken")
    with pytest.raises(IntegrityError), transaction.atomic():
        one(
            "INSERT INTO checkpoints_workspace (slug, name, created_at) VALUES (%s, '', now())",
            ["taken"],
        )
    assert one("SELECT count(*) FROM checkpoints_workspace WHERE slug = %s", ["taken"])[0] == (1,)


@pytest.mark.django_db
def test_execute_wrappers_see_every_statement() -> None:
    seen: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    one("SELECT 1")  # the kept cursor exists before the wrapper is installed
    with connection.execute_wrapper(record):
        one("SELECT 3")
    assert seen == ["SELECT 3"]


@pytest.mark.django_db
def test_logged_queries_run_on_djangos_own_cursor() -> None:
    _, kept = one("SELECT 1")
    with CaptureQueriesContext(connection) as captured:
        row, logged = one("SELECT %s::int", [5])
    assert row == (5,) and logged is not kept
    assert [query["sql"] for query in captured.captured_queries] == ["SELECT 5::int"]
    assert one("SELECT 1")[1] is kept  # logging off again: the kept cursor


@pytest.mark.django_db(transaction=True)
def test_each_thread_has_its_own() -> None:
    _, mine = one("SELECT 1")
    theirs: list[Any] = []

    def other() -> None:
        try:
            theirs.append(one("SELECT 1")[1])
        finally:
            connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert theirs and theirs[0] is not mine and theirs[0].connection is not mine.connection


TIMESTAMPS = "SELECT %s::timestamptz, %s::timestamptz, NULL::timestamptz"
MOMENTS = ["2026-11-27 13:45:01.123456+00", "0001-01-01 00:00:00+00"]


def _djangos(sql: str, params: list[Any]) -> tuple[Any, ...]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return tuple(cursor.fetchone())


@pytest.mark.django_db
def test_timestamps_load_as_djangos_cursor_loads_them() -> None:
    (row, raw) = one(TIMESTAMPS, MOMENTS)
    expected = _djangos(TIMESTAMPS, MOMENTS)
    assert row == expected and row[2] is None
    assert [value.tzinfo for value in row[:2]] == [value.tzinfo for value in expected[:2]]
    assert row[0].tzinfo is connection.timezone
    loader = raw.adapters.get_loader(hot_cursor.TIMESTAMPTZ_OID, hot_cursor.Format.TEXT)
    assert not hasattr(loader, "timezone")  # psycopg's own, not Django's


@pytest.mark.django_db(transaction=True)
def test_a_session_in_another_zone_keeps_djangos_loader() -> None:
    connection.close()
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Asia/Kolkata'")  # what Django would not leave behind
    try:
        (row, raw) = one(TIMESTAMPS, MOMENTS)
        loader = raw.adapters.get_loader(hot_cursor.TIMESTAMPTZ_OID, hot_cursor.Format.TEXT)
        assert loader.timezone is connection.timezone  # Django's
        assert row == _djangos(TIMESTAMPS, MOMENTS)
    finally:
        connection.close()
