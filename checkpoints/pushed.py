"""A cache value that Redis pushes to every process, read without a round trip (docs/api/index.md).

Whoever changes the value stores and publishes it in one round trip (`ResilientRedisCache.set_and_publish`).
Each process subscribes once, on a connection of its own, and reads what has arrived there whenever it asks
(`PushedValue.current`: a look at its own socket, which waits on nobody). It vouches for the value only while
it knows its subscription is alive: it pings the server at most every `HEARTBEAT_SECONDS`, from a request and
without waiting for the answer, and trusts the channel for `TRUST_SECONDS` after the server's last sign of
life on it. Replies and messages arrive in order on the one connection, so once that sign of life is read,
nothing published before it is still on its way. Otherwise (no subscription yet, a cache without
publish/subscribe, Redis unreachable or refusing to subscribe, the connection closed or silent) `current`
answers None and the caller asks the cache, as it would without this; a subscription that could not be made
is tried again after `RETRY_SECONDS`, not on every request.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from redis.exceptions import RedisError

from checkpoints.cache import CacheUnavailable

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 1.0
TRUST_SECONDS = 2.0
RETRY_SECONDS = 5.0  # after a subscription could not be made (Redis down, or refusing pub/sub)


class PushedValue:
    def __init__(self, channel: str, read: Callable[[], Any]) -> None:
        """`channel`: where the value is published; `read`: the value from the cache, None if it cannot say
        (asked once subscribed, so that nothing published from then on is missed)."""
        self.channel = channel
        self._read = read
        self._lock = threading.Lock()
        self._subscriber: tuple[int, str] | None = None  # the process and the Redis it subscribed to
        self._connection: Any = None
        self._value: Any = None
        self._alive_at = 0.0  # monotonic: the subscription's last sign of life
        self._pinged_at = 0.0
        self._retry_at = 0.0  # monotonic: when to try subscribing again after a failure

    def current(self) -> Any:
        """The value as last pushed to this process, or None when its subscription cannot vouch for it."""
        cache: Any = caches[DEFAULT_CACHE_ALIAS]  # once: each `django.core.cache.cache.x` looks it up
        if not hasattr(cache, "subscribe"):  # a cache without publish/subscribe (local memory)
            return None
        subscriber = (os.getpid(), cache.location)
        with self._lock:
            try:
                if self._connection is None or self._subscriber != subscriber:
                    if self._subscriber == subscriber and time.monotonic() < self._retry_at:
                        return None  # the last attempt failed a moment ago
                    self._subscribe(cache, subscriber)
                self._drain(cache)
                now = time.monotonic()
                if now - self._pinged_at >= HEARTBEAT_SECONDS:
                    self._connection.send_command("PING")
                    self._pinged_at = now
                return self._value if now - self._alive_at <= TRUST_SECONDS else None
            except CacheUnavailable:  # no subscription made: try again later, not on every request
                self._retry_at = time.monotonic() + RETRY_SECONDS
                return None
            except (RedisError, OSError) as exc:
                self._close(exc)
                return None

    def _subscribe(self, cache: Any, subscriber: tuple[int, str]) -> None:
        if self._connection is not None:  # another Redis (settings changed in tests): its value is void
            self._connection.disconnect()
        # Set first: a forked child never reads its parent's socket, and a failure waits RETRY_SECONDS.
        self._connection, self._subscriber = None, subscriber
        connection = cache.subscribe(self.channel)
        value = self._read()
        if value is None:
            connection.disconnect()
            raise CacheUnavailable("the value cannot be read")
        self._connection, self._value = connection, value
        self._alive_at = self._pinged_at = time.monotonic()

    def _drain(self, cache: Any) -> None:
        connection = self._connection
        while connection.can_read(timeout=0):
            kind, *rest = connection.read_response()
            self._alive_at = time.monotonic()
            if kind == b"message":
                self._value = cache.loads(rest[1])

    def _close(self, exc: Exception) -> None:
        if self._connection is not None:
            logger.warning("subscription to %s lost, asking the cache instead: %s", self.channel, exc)
            self._connection.disconnect()
        self._connection = None

    def forget(self) -> None:
        """Unsubscribe this process and forget any failed attempt (tests)."""
        with self._lock:
            if self._connection is not None:
                self._connection.disconnect()
            self._connection, self._subscriber, self._retry_at = None, None, 0.0
