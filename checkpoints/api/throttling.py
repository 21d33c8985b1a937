"""Per-key rate limits in a fixed window, counted in the shared cache (Redis in production).

`cache.add` + `cache.incr` are atomic in Redis, so every web process counts against the same window. When
the cache is unreachable the throttle fails open: the API keeps serving (SPEC section 7 puts availability
first); the cache logs the outage.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from checkpoints.cache import CacheUnavailable
from checkpoints.models import ApiKey

_PERIODS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}


def parse_rate(rate: str) -> tuple[int, int]:
    """'6000/min' -> (6000, 60)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


class ApiKeyRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return True
        limit, period = parse_rate(key.throttle_rate or settings.CAIRN_THROTTLE_RATE)
        now = time.time()
        window = int(now // period)
        cache_key = f"throttle:{key.pk}:{period}:{window}"
        try:
            cache.add(cache_key, 0, timeout=period + 1)
            count = cache.incr(cache_key)
        except (CacheUnavailable, ValueError):
            # ValueError: the counter vanished between add and incr (eviction); count this request as free.
            return True
        if count > limit:
            self._wait = (window + 1) * period - now
            return False
        return True

    def wait(self) -> float | None:
        return self._wait
