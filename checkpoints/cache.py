"""A Redis cache that degrades instead of failing: Redis down means slower, never a 500 (docs/security.md).

Reads miss, writes are dropped and deletes are remembered as failed (callers that need freshness check the
return value). After a failure the backend skips Redis for a short cool-down, so a dead Redis costs one
connection attempt per process per cool-down rather than one per cache call.

The cache calls are Django's own Redis backend's. The few commands it has no method for (a read and a
window's count in one round trip, a value stored and published, a subscription) go through a redis-py
client of this backend's own, made from the same LOCATION and OPTIONS, with redis-py's public API only.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import redis
from django.core.cache import cache
from django.core.cache.backends.redis import RedisCache, RedisSerializer
from django.utils.functional import cached_property
from django.utils.module_loading import import_string
from redis.exceptions import RedisError, ResponseError

logger = logging.getLogger(__name__)
T = TypeVar("T")

COOL_DOWN_SECONDS = 5.0


class CacheUnavailable(Exception):
    """Raised by `incr` when Redis is down, so throttling can decide how to fail."""


class ResilientRedisCache(RedisCache):
    # When each Redis (by its location) may be tried again. Per location and per process: Django makes a cache
    # instance per thread, and one dead Redis must not switch off another one configured next to it.
    _down_until: ClassVar[dict[str, float]] = {}

    # OPTIONS that Django's backend reads itself; the rest configure redis-py's connection pool.
    DJANGO_OPTIONS = frozenset({"serializer", "pool_class", "parser_class"})

    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        # Parsed as Django's backend parses LOCATION; writes go to the first server, as Django's do.
        self.servers: list[str] = re.split("[;,]", server) if isinstance(server, str) else list(server)
        self.pool_options = {
            name: value
            for name, value in params.get("OPTIONS", {}).items()
            if name not in self.DJANGO_OPTIONS
        }
        # The serializer Django's backend uses (OPTIONS["serializer"] read as Django reads it), so the values
        # this backend writes and reads by hand are the ones Django's cache calls read and write.
        serializer = params.get("OPTIONS", {}).get("serializer") or RedisSerializer
        serializer = import_string(serializer) if isinstance(serializer, str) else serializer
        self.serializer = serializer() if callable(serializer) else serializer

    @cached_property
    def client(self) -> redis.Redis:
        """A redis-py client of this backend's own, on the first server (redis-py's pool reconnects a
        connection the server dropped, and a forked process opens its own)."""
        return redis.Redis.from_url(self.servers[0], **self.pool_options)

    def _mark_down(self, exc: Exception) -> None:
        ResilientRedisCache._down_until[self.location] = time.monotonic() + COOL_DOWN_SECONDS
        logger.warning("cache unavailable, serving without it for %ss: %s", COOL_DOWN_SECONDS, exc)

    @property
    def location(self) -> str:
        """The Redis server(s) this cache talks to."""
        return ",".join(self.servers)

    def _guard(self, operation: Callable[[], T], fallback: T) -> T:
        if not self.is_available:
            return fallback
        try:
            return operation()
        except (RedisError, OSError) as exc:
            self._mark_down(exc)
            return fallback

    @property
    def is_available(self) -> bool:
        return time.monotonic() >= ResilientRedisCache._down_until.get(self.location, 0.0)

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        return self._guard(lambda: super(ResilientRedisCache, self).get(key, default, version), default)

    def get_many(self, keys: Any, version: int | None = None) -> dict[Any, Any]:
        return self._guard(lambda: super(ResilientRedisCache, self).get_many(keys, version), {})

    def set(self, key: Any, value: Any, timeout: Any = None, version: int | None = None) -> None:
        kwargs: dict[str, Any] = {"version": version}
        if timeout is not None:
            kwargs["timeout"] = timeout
        self._guard(lambda: super(ResilientRedisCache, self).set(key, value, **kwargs), None)

    def add(self, key: Any, value: Any, timeout: Any = None, version: int | None = None) -> bool:
        kwargs: dict[str, Any] = {"version": version}
        if timeout is not None:
            kwargs["timeout"] = timeout
        return self._guard(lambda: super(ResilientRedisCache, self).add(key, value, **kwargs), False)

    def delete(self, key: Any, version: int | None = None) -> bool:
        return self._guard(lambda: super(ResilientRedisCache, self).delete(key, version), False)

    def delete_many(self, keys: Any, version: int | None = None) -> None:
        self._guard(lambda: super(ResilientRedisCache, self).delete_many(keys, version), None)

    def has_key(self, key: Any, version: int | None = None) -> bool:
        return self._guard(lambda: super(ResilientRedisCache, self).has_key(key, version), False)

    def touch(self, key: Any, timeout: Any = None, version: int | None = None) -> bool:
        return self._guard(lambda: super(ResilientRedisCache, self).touch(key, timeout, version), False)

    def incr_window(self, key: Any, timeout: int, by: int = 1) -> int:
        """Count `by` more hits in a fixed window: create the counter at 0 with `timeout` unless it exists,
        then increment it; both commands in one round trip. Raises CacheUnavailable when Redis is down."""
        return self.get_and_incr_window(None, key, timeout, by)[1]

    def get_and_incr_window(
        self, get_key: Any, window_key: Any, timeout: int, by: int = 1
    ) -> tuple[Any, int]:
        """`get(get_key)` (unless None) and `incr_window(window_key, timeout, by)` in one round trip: the
        value and the window's count. Raises CacheUnavailable when Redis is down."""
        counter = self.make_and_validate_key(window_key)
        commands: list[tuple[Any, ...]] = [("SET", counter, 0, "EX", timeout, "NX"), ("INCRBY", counter, by)]
        if get_key is not None:
            commands.insert(0, ("GET", self.make_and_validate_key(get_key)))
        results = self._round_trip(commands)
        raw = results[0] if get_key is not None else None
        return (None if raw is None else self.loads(raw)), int(results[-1])

    def set_and_publish(self, key: Any, value: Any, channel: str) -> None:
        """`set(key, value)` without expiry and the same value published on `channel` (`subscribe`), in one
        round trip. Raises CacheUnavailable when Redis is down."""
        data = self.serializer.dumps(value)
        stored = self.make_and_validate_key(key)
        self._round_trip([("SET", stored, data), ("PUBLISH", self.channel_name(channel), data)])

    def subscribe(self, channel: str) -> Any:
        """A new connection, configured as the pool's and of this process alone, subscribed to `channel`
        (confirmed). Its messages carry values as `loads` reads them. Raises CacheUnavailable when Redis is
        down."""
        if not self.is_available:
            raise CacheUnavailable("cache is cooling down after a failure")
        name = self.channel_name(channel)
        pool = self.client.connection_pool
        # RESP2: messages arrive as plain replies (redis-py may speak RESP3, whose pushes its parser hands to
        # a callback instead of returning them).
        connection = pool.connection_class(**{**pool.connection_kwargs, "protocol": 2})
        try:
            connection.send_command("SUBSCRIBE", name)
            connection.read_response()
        except ResponseError as exc:  # Redis answers, but refuses (an ACL without pub/sub): the cache is fine
            connection.disconnect()
            raise CacheUnavailable(str(exc)) from exc
        except (RedisError, OSError) as exc:
            connection.disconnect()
            self._mark_down(exc)
            raise CacheUnavailable(str(exc)) from exc
        return connection

    def channel_name(self, channel: str) -> str:
        """Channels are shared by every database of a Redis server: the name carries the key prefix and the
        database, as keys are kept apart."""
        database = self.client.connection_pool.connection_kwargs.get("db", 0)
        return f"{self.make_and_validate_key(channel)}@{database}"

    def loads(self, raw: bytes) -> Any:
        """A value as Django's Redis backend stores it (its serializer)."""
        return self.serializer.loads(raw)

    def _round_trip(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """Send `commands` in one write and read their replies (a pipeline without MULTI)."""
        if not self.is_available:
            raise CacheUnavailable("cache is cooling down after a failure")
        try:
            pipeline = self.client.pipeline(transaction=False)
            for command in commands:
                pipeline.execute_command(*command)
            return pipeline.execute()
        except (RedisError, OSError) as exc:
            self._mark_down(exc)
            raise CacheUnavailable(str(exc)) from exc

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        if not self.is_available:
            raise CacheUnavailable("cache is cooling down after a failure")
        try:
            return super().incr(key, delta, version)
        except (RedisError, OSError) as exc:
            self._mark_down(exc)
            raise CacheUnavailable(str(exc)) from exc


def count_hit(cache_key: str, timeout: int, by: int = 1) -> int:
    """`by` more hits in the fixed window `cache_key` (created with `timeout`); the count after them. One
    Redis round trip (`ResilientRedisCache.incr_window`), or add + incr on other backends (local memory).
    Raises CacheUnavailable when Redis is down, ValueError if the counter vanished between add and incr."""
    incr_window = getattr(cache, "incr_window", None)
    if incr_window is not None:
        return int(incr_window(cache_key, timeout, by))
    cache.add(cache_key, 0, timeout=timeout)
    return cache.incr(cache_key, by)
