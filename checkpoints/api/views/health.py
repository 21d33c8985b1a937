"""`GET /healthz` (no auth): is each backing service reachable? 200 if all are, else 503."""

from __future__ import annotations

import logging
import secrets

from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from project.celery import app as celery_app

logger = logging.getLogger(__name__)


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except DatabaseError as exc:
        logger.warning("healthz: database: %s", exc)
        return "unavailable"


def _cache() -> str:
    # A key of its own per probe: with one shared key, concurrent probes overwrite each other's value between
    # the write and the read-back and report a healthy Redis as unavailable.
    key, probe = f"healthz:{secrets.token_hex(8)}", secrets.token_hex(4)
    cache.set(key, probe, 10)
    answered = cache.get(key) == probe
    cache.delete(key)
    return "ok" if answered else "unavailable"


def _broker() -> str:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return "ok"
    except Exception as exc:  # kombu raises transport-specific errors; any failure means "unreachable"
        logger.warning("healthz: broker: %s", exc)
        return "unavailable"


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _database(), "cache": _cache(), "broker": _broker()}
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse(checks, status=200 if healthy else 503)
