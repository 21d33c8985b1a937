"""Per-key rate limits in a fixed window, counted in the shared cache (Redis in production).

Every web process counts against the same window: a hit's number comes from one atomic increment in Redis,
made for each request or, for a fast key whose changes Redis pushes to the process, for a lease of hits the
process then hands out itself (`checkpoints.storage.api_key_cache`). When the cache is unreachable the
throttle fails open: the API keeps serving (availability first: docs/security.md); the cache logs the outage.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from checkpoints.cache import CacheUnavailable, count_hit
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import ApiKey
from checkpoints.services.workspaces import throttle_rate_parse
from checkpoints.storage.api_key_cache import RateWindow

logger = logging.getLogger(__name__)


def key_rate(key: ApiKey) -> tuple[int, int]:
    """The key's own rate, or the default. A bad stored rate (written around the validators, e.g. in the
    admin or SQL) falls back to the default rather than failing every request of the key with a 500."""
    if key.throttle_rate:
        try:
            return throttle_rate_parse(key.throttle_rate)
        except ValidationFailed:
            logger.warning(
                "API key %s has an invalid throttle_rate %r; using the default", key.prefix, key.throttle_rate
            )
    return throttle_rate_parse(settings.CAIRN_THROTTLE_RATE)


# Hits a process takes from a key's window at once: one per request below 200 per window, so a slow key is
# counted exactly; then a hundredth of the limit, at most 64 (docs/api/index.md).
LEASE_SHARE = 100
LEASE_MAX = 64


def rate_window(key: ApiKey, now: float | None = None) -> RateWindow:
    """The counter of the key's current fixed window, its timeout (the window, plus a second) and lease."""
    limit, period = key_rate(key)
    window = int((time.time() if now is None else now) // period)
    lease = max(1, min(LEASE_MAX, limit // LEASE_SHARE))
    return RateWindow(f"throttle:{key.pk}:{period}:{window}", period + 1, lease)


class ApiKeyRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return True
        limit, period = key_rate(key)
        now = time.time()
        window = int(now // period)
        cache_key, timeout, _lease = rate_window(key, now)
        if key.window_hits is not None and key.window_hits[0] == cache_key:
            count = key.window_hits[1]  # counted while authenticating, or asked before
        else:
            try:
                count = count_hit(cache_key, timeout)
            except (CacheUnavailable, ValueError):
                # ValueError: the counter vanished between add and incr (eviction); count this one as free.
                return True
            # The request's own copy of the key: asked again, it counts once.
            key.window_hits = (cache_key, count)
        if count > limit:
            self._wait = (window + 1) * period - now
            return False
        return True

    def wait(self) -> float | None:
        return self._wait
