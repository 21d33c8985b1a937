"""Planner statistics for Cairn's tables, kept fresh by the web processes themselves (docs/performance.md).

Every per-request statement is an indexed lookup, but PostgreSQL picks the index from table statistics. A
table that was never analyzed looks like a page or two to the planner, and every index that starts with
`workspace_id` then looks as good as another: a restore by public id was seen walking all of a workspace's
checkpoints through `checkpoint_ws_writer` instead of seeking `checkpoint_ws_public_id`. Autovacuum analyzes
a table once a tenth of it has changed, but only every minute, and not at all where it is switched off.

So after an API request, at most once per `CHECK_SECONDS` across all processes (a lock in the shared cache), a
web process checks its tables after the response has been sent and analyzes those that changed by autovacuum's
own measure since they were last analyzed. Reads check too: writes that came in one burst (an import, a
benchmark's saves) and were followed only by reads would otherwise never be analyzed, and a restore by public
id would keep walking every checkpoint of its workspace. The check is one query on `pg_stat_user_tables`;
ANALYZE reads a sample (at most 30,000 rows per table), so its cost does not grow with the table.
"""

from __future__ import annotations

import logging
import time

from django.core.cache import cache
from django.db import DatabaseError, connection

from checkpoints.after_response import after_response
from checkpoints.models import Checkpoint, Message, PendingWrite, StoredValue, Thread

logger = logging.getLogger(__name__)

CHECK_SECONDS = 10.0
TABLES = tuple(model._meta.db_table for model in (Checkpoint, Thread, Message, PendingWrite, StoredValue))
# Autovacuum's defaults: analyze after 50 rows plus a tenth of the table changed.
BASE_THRESHOLD = 50
SCALE_FACTOR = 0.1
_LOCK_KEY = "table-statistics:check"

_STALE = (
    "SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
    "WHERE s.relname = ANY(%s) AND s.n_mod_since_analyze > %s + %s * greatest(c.reltuples, 0)"
)

_next_check = 0.0


def after_request() -> None:
    """Call after an API request: schedules the check if it is due (PostgreSQL only)."""
    global _next_check
    now = time.monotonic()
    if now < _next_check or connection.vendor != "postgresql":
        return
    _next_check = now + CHECK_SECONDS
    after_response(_check_if_first)


def _check_if_first() -> None:
    # One process per interval (while the cache is down, none: the statistics wait for it).
    if cache.add(_LOCK_KEY, 1, timeout=CHECK_SECONDS):
        analyze_stale_tables()


def analyze_stale_tables() -> list[str]:
    """Analyze each of Cairn's tables that changed enough since its last analysis; the tables analyzed."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(_STALE, [list(TABLES), BASE_THRESHOLD, SCALE_FACTOR])
            stale = sorted(row[0] for row in cursor.fetchall())
            for table in stale:
                cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    except DatabaseError:  # e.g. a role that does not own the tables: the planner does without
        logger.warning("could not analyze Cairn's tables", exc_info=True)
        return []
    return stale
