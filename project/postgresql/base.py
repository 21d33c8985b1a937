"""Django's PostgreSQL backend with a health check that costs no round trip while the connection is quiet.

Django checks a persistent connection before each request's first query with `SELECT 1`: a round trip on
every request, the most expensive part of a restore. A connection the server has closed (a restart, an idle
timeout, `pg_terminate_backend`) has something to read on its socket — the server's error notice or end of
file — while a healthy idle connection has nothing. So the socket is polled first, without waiting, and only
a readable socket gets the full `SELECT 1`. See docs/performance.md.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base

from checkpoints.parts import enabled


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        if not enabled("quiet_health_check"):
            return bool(super().is_usable())
        if self.connection is None or self.connection.closed:
            return False
        try:
            readable, _, _ = select.select([self.connection.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable or bool(super().is_usable())
