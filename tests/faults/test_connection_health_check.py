"""The database connection's health check (project/postgresql/base.py): a quiet connection is trusted
without a round trip, and one the server has closed is found and replaced before a request uses it."""

from __future__ import annotations

import time
from unittest import mock

import psycopg
import pytest
from django.conf import settings
from django.db import connection, connections

from tests.conftest import POSTGRES_PART_ON_AND_OFF

pytestmark = POSTGRES_PART_ON_AND_OFF
PART = "quiet_health_check"  # run on and off: checkpoints.parts


def test_the_production_database_settings_use_the_backend_with_the_quiet_health_check() -> None:
    assert settings.DATABASES["default"]["ENGINE"] == "project.postgresql"
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True
    assert type(connections["default"]).__module__ == "project.postgresql.base"


@pytest.mark.needs_part
def test_a_quiet_connection_passes_the_health_check_without_a_round_trip() -> None:
    connection.ensure_connection()
    raw = connection.connection
    with mock.patch.object(raw, "cursor", wraps=raw.cursor) as cursor:
        assert connection.is_usable()
    assert cursor.call_count == 0


def test_a_connection_the_server_closed_is_found_and_replaced() -> None:
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    with psycopg.connect(
        host=params.get("host"),
        port=params.get("port"),
        user=params.get("user"),
        dbname=params["dbname"],
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while connection.is_usable() and time.monotonic() < deadline:
        time.sleep(0.05)  # the server's notice reaches the socket a moment after the backend exits
    assert not connection.is_usable()
    connection.health_check_done = False  # type: ignore[attr-defined]  # set by Django per request
    connection.close_if_health_check_failed()
    assert connection.connection is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid
