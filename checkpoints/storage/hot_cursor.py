"""The hot cursor: on PostgreSQL it binds parameters server-side and prepares every statement (parsed and
planned once per connection), and is kept per connection so psycopg's per-cursor loaders and dumpers are
looked up once.

It exists because Django's own cursors interpolate on the client and never prepare, which the statements
agents run on every step pay for each time (docs/performance.md). Everything else keeps Django's cursor.
"""

from __future__ import annotations

import threading
from datetime import tzinfo
from functools import cache
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections
from psycopg.pq import Format

from checkpoints.parts import enabled

TIMESTAMPTZ = "timestamptz"
TIMESTAMPTZ_OID = psycopg.adapters.types[TIMESTAMPTZ].oid


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


def cursor() -> Any:
    """A cursor for these statements, for `with cursor() as c:`. On PostgreSQL it binds parameters
    server-side and prepares every statement (Django's own cursors interpolate on the client and never
    prepare); it is wrapped like any Django cursor, so it counts in tests and maps errors the same way. It
    is kept and used again on the same connection of the same thread (psycopg keeps, per cursor, the
    loaders and dumpers it looked up for the statements' columns and values): leaving the `with` does not
    close it, and it holds its last result until the next statement. While queries are logged (DEBUG,
    tests capturing queries) Django's own cursor runs them, so the log shows each one whole, ready to
    EXPLAIN."""
    db = connections[DEFAULT_DB_ALIAS]  # once: each `django.db.connection.x` looks up the thread's connection
    if db.vendor != "postgresql" or db.queries_logged or not enabled("prepared_statements"):
        return db.cursor()
    db.close_if_health_check_failed()
    db.ensure_connection()
    kept: tuple[Any, Any] | None = getattr(_kept, "cursor", None)  # (psycopg connection, wrapped cursor)
    if kept is not None and kept[0] is db.connection and not kept[1].cursor.closed:
        db.validate_thread_sharing()
        return _Open(kept[1])
    with db.wrap_database_errors:
        raw = _prepared_cursor_class()(db.connection)
        _load_timestamps_natively(raw, db.timezone)
        wrapped = db.make_cursor(raw)  # Django's wrapping of a cursor (queries are not logged here)
    _kept.cursor = (db.connection, wrapped)
    return _Open(wrapped)


def _load_timestamps_natively(raw: Any, timezone: tzinfo | None) -> None:
    """psycopg's own `timestamptz` loader on the hot cursor where it gives what Django's gives. Django's
    (written in Python) loads as psycopg's does, then sets the zone to the connection's (`timezone`); it is
    psycopg's own zone whenever the session's TimeZone is that zone, as Django makes it, and psycopg's
    loader is compiled (a restore loads three of them)."""
    if timezone is not None and raw.connection.info.timezone is timezone:
        raw.adapters.register_loader(TIMESTAMPTZ, psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT))


# The hot cursor of each thread's connection (Django's connections are per thread too).
_kept = threading.local()


class _Open:
    """`with` around a kept cursor: gives it, and leaves it open."""

    __slots__ = ("_cursor",)

    def __init__(self, kept: Any) -> None:
        self._cursor = kept

    def __enter__(self) -> Any:
        return self._cursor

    def __exit__(self, *exc: object) -> None:
        return None


@cache
def _prepared_cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor

    class PreparedCursor(ServerBindingCursor):
        def execute(
            self, query: Any, params: Any = None, *, prepare: bool | None = True, **kwargs: Any
        ) -> Any:
            return super().execute(query, params, prepare=prepare, **kwargs)  # type: ignore[misc]

    return PreparedCursor
