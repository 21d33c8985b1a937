"""A value Redis pushes to the process (checkpoints.pushed.PushedValue, what key authentication trusts without
a round trip): a change is read from the process's own socket on its next look, without waiting on anyone;
the subscription vouches only while it is known to be alive (a closed connection at once, a silent one after
TRUST_SECONDS without an answer to its heartbeat); and another process, or another Redis, subscribes anew."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.conf import settings
from django.core.cache import cache

from checkpoints import pushed as pushed_module
from checkpoints.pushed import PushedValue

pytestmark = pytest.mark.redis


@pytest.fixture
def pushed() -> Iterator[PushedValue]:
    channel = f"pushed-test:{uuid.uuid4().hex}"
    cache.set(channel, "v1", timeout=60)
    value = PushedValue(channel, lambda: cache.get(channel))
    yield value
    value.forget()
    cache.delete(channel)


@pytest.fixture
def sent(redis_commands: Counter[str]) -> Counter[str]:
    return redis_commands


def raw_redis() -> Any:
    return redis.Redis.from_url(settings.CACHES["default"]["LOCATION"])


def test_a_published_change_is_read_on_the_next_look_without_a_round_trip(
    pushed: PushedValue, sent: Counter[str]
) -> None:
    assert pushed.current() == "v1"  # subscribes, then reads the value
    assert sent["SUBSCRIBE"] == 1
    cache.set_and_publish(pushed.channel, "v2", pushed.channel)  # type: ignore[attr-defined]
    assert cache.get(pushed.channel) == "v2"
    sent.clear()

    # Redis writes the notice to its subscribers in the turn of its loop that answers the change, so on
    # one host it is already in this process's socket.
    assert pushed.current() == "v2"
    assert pushed.current() == "v2"
    assert sent == Counter()


def test_a_closed_subscription_stops_vouching_at_once_and_is_made_again(pushed: PushedValue) -> None:
    assert pushed.current() == "v1"
    assert raw_redis().client_kill_filter(_type="pubsub") >= 1
    cache.set(pushed.channel, "v2", timeout=60)  # changed while no subscription can hear it

    assert pushed.current() is None  # the caller asks the cache itself
    assert pushed.current() == "v2"  # subscribed again, and read the value once subscribed


def test_a_silent_subscription_stops_vouching_after_the_trust_bound(
    pushed: PushedValue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pushed_module, "HEARTBEAT_SECONDS", 0.05)
    monkeypatch.setattr(pushed_module, "TRUST_SECONDS", 0.3)
    assert pushed.current() == "v1"
    # Redis takes the subscription's heartbeat but does not answer it: a connection that hangs.
    raw_redis().execute_command("CLIENT", "PAUSE", 700, "ALL")
    try:
        time.sleep(0.1)
        assert pushed.current() == "v1"  # pings, and is still within the bound
        time.sleep(0.4)
        assert pushed.current() is None  # no answer for longer than TRUST_SECONDS
    finally:
        time.sleep(0.4)  # the pause ends; the answers arrive and the subscription vouches again
    assert pushed.current() == "v1"


def test_the_heartbeat_is_sent_at_most_once_per_period(pushed: PushedValue, sent: Counter[str]) -> None:
    assert pushed.current() == "v1"
    sent.clear()
    for _ in range(50):
        assert pushed.current() == "v1"
    assert sent["PING"] == 0  # the subscription itself proved the connection alive a moment ago


def test_a_forked_process_subscribes_on_its_own_connection(
    pushed: PushedValue, monkeypatch: pytest.MonkeyPatch, sent: Counter[str]
) -> None:
    assert pushed.current() == "v1"
    parents = pushed._connection
    monkeypatch.setattr(pushed_module.os, "getpid", lambda: -1)  # as the child of a fork sees itself
    assert pushed.current() == "v1"
    assert pushed._connection is not parents and sent["SUBSCRIBE"] == 2


def test_without_publish_and_subscribe_it_never_vouches(settings: Any) -> None:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cache.set("locmem-value", "v1")
    assert PushedValue("locmem-value", lambda: cache.get("locmem-value")).current() is None


def test_an_unreachable_redis_is_not_trusted(settings: Any) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "checkpoints.cache.ResilientRedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    assert PushedValue("anything", lambda: "v1").current() is None


def test_a_redis_that_refuses_pub_sub_is_not_trusted_and_not_asked_on_every_request(
    settings: Any, sent: Counter[str]
) -> None:
    user = f"nopubsub-{uuid.uuid4().hex[:8]}"
    raw_redis().acl_setuser(user, enabled=True, nopass=True, keys=["*"], commands=["+@all", "-@pubsub"])
    try:
        location = settings.CACHES["default"]["LOCATION"].replace("redis://", f"redis://{user}:x@", 1)
        settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": location}}
        cache.set("refused-value", "v1", timeout=60)
        pushed = PushedValue("refused-value", lambda: cache.get("refused-value"))

        assert pushed.current() is None  # SUBSCRIBE refused (NOPERM): the caller asks the cache
        assert cache.get("refused-value") == "v1" and cache.is_available  # type: ignore[attr-defined]
        assert pushed.current() is None
        assert sent["SUBSCRIBE"] == 1  # tried again only after RETRY_SECONDS
    finally:
        raw_redis().acl_deluser(user)
