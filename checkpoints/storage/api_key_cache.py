"""API keys remembered per process, so an authenticated request costs no database query and, while Redis
pushes key changes to the process, no Redis round trip either.

Each process keeps the keys it has loaded (with their workspace), tagged with the *key generation* it knew
before loading them. Every change to a key or a workspace made through Cairn (revocation, expiry, scope,
throttle rate, retention settings, deletion; services, admin and dashboard alike) stores a new random
generation once its transaction commits and publishes it to every process (`checkpoints.pushed`), so each
process reloads on its next request: revocation takes effect at once everywhere. A process whose subscription
cannot vouch for the generation reads it from Redis on every request instead, and when Redis cannot answer
at all nothing is trusted and every request reads the database. A remembered key is also reloaded after
`CAIRN_API_KEY_CACHE_SECONDS`, the bound for changes written around Cairn (raw SQL). The key's rate window is
counted in leases of hits taken from Redis (`RateWindow.lease`), so most requests count theirs in memory.
See docs/api/index.md.
"""

from __future__ import annotations

import contextlib
import copy
import hmac
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from checkpoints.cache import CacheUnavailable, count_hit
from checkpoints.models import ApiKey
from checkpoints.parts import enabled
from checkpoints.pushed import PushedValue

GENERATION_KEY = "apikeys:generation"


class RateWindow(NamedTuple):
    """A key's rate window, as the throttle names it: its counter in the cache, the counter's timeout in
    seconds, and how many hits a process takes from it at once (its lease)."""

    counter: str
    timeout: int
    lease: int


WindowOf = Callable[[ApiKey], RateWindow]


@dataclass(frozen=True)
class _Entry:
    key: ApiKey
    generation: str
    loaded_at: float


_entries: dict[str, _Entry] = {}
# Per key prefix: the window counter leased from, the next hit number of the lease and its last one.
_leases: dict[str, tuple[str, int, int]] = {}
_lock = threading.Lock()


def _current_generation() -> str | None:
    """The shared generation, created if missing (a fresh or flushed cache); None if the cache is down."""
    generation = cache.get(GENERATION_KEY)
    if generation is None:
        cache.add(GENERATION_KEY, uuid.uuid4().hex, timeout=None)
        generation = cache.get(GENERATION_KEY)
    return generation if isinstance(generation, str) else None


# The generation as Redis pushes it to this process: no round trip while the subscription vouches for it.
_pushed_generation = PushedValue(GENERATION_KEY, _current_generation)


def api_key_cached(prefix: str, *, secret_hash: str, count_in: WindowOf | None = None) -> ApiKey | None:
    """The key with this prefix (workspace loaded), from this process's memory when still current, else
    from the database. A copy: callers may change it without touching what other requests see.

    `count_in` names the rate window of the remembered key: when the secret matches that key, the request's
    hit is counted (from the process's lease while the generation is pushed, else in the same round trip
    that reads the generation) and left on the returned key as `window_hits` (the throttle's count, without
    a round trip of its own).
    """
    if not enabled("api_key_cache"):
        return ApiKey.objects.select_related("workspace").filter(prefix=prefix).first()
    entry = _entries.get(prefix)
    hits = None
    generation = _pushed_generation.current()
    if entry is not None and count_in is not None and hmac.compare_digest(entry.key.secret_hash, secret_hash):
        window = count_in(entry.key)
        if generation is not None:
            hits = _leased_hit(prefix, window)
        else:
            generation, hits = _generation_and_hit(window)
    elif generation is None:
        generation = _current_generation()
    remembered = (
        entry is not None
        and generation is not None
        and entry.generation == generation
        and time.monotonic() - entry.loaded_at < settings.CAIRN_API_KEY_CACHE_SECONDS
    )
    if entry is not None and remembered:
        key = entry.key
    else:
        # The generation was read before the row: a change committed in between bumps it again, so the
        # row cached here is reloaded on the next request.
        loaded = ApiKey.objects.select_related("workspace").filter(prefix=prefix).first()
        if loaded is None:
            return None
        key = loaded
        if generation is not None:
            with _lock:
                _entries[prefix] = _Entry(key, generation, time.monotonic())
    duplicate = copy.copy(key)  # its own state and related objects' cache, so changing it leaves the entry
    duplicate.workspace = copy.copy(key.workspace)
    duplicate.window_hits = hits
    return duplicate


def _generation_and_hit(window: RateWindow) -> tuple[str | None, tuple[str, int] | None]:
    """The generation and one hit counted in `window`, in one round trip where the cache can (Redis)."""
    get_and_incr_window = getattr(cache, "get_and_incr_window", None)
    if get_and_incr_window is None:
        return _current_generation(), None
    try:
        generation, count = get_and_incr_window(GENERATION_KEY, window.counter, window.timeout)
    except CacheUnavailable:
        return None, None
    if not isinstance(generation, str):
        generation = _current_generation()  # a fresh or flushed cache: create it
    return generation, (window.counter, count)


def _leased_hit(prefix: str, window: RateWindow) -> tuple[str, int] | None:
    """One hit of the key's window, numbered from this process's lease; a new lease of `window.lease` hits
    (one round trip) when the lease is spent or belongs to an earlier window. Every number is handed out
    once across all processes, so no more hits than the limit pass; hits leased but not used before the
    window ends are lost, so up to (processes - 1) x (lease - 1) fewer may. None if the cache cannot count."""
    with _lock:
        counter, number, last = _leases.get(prefix, ("", 0, -1))
        if counter == window.counter and number <= last:
            _leases[prefix] = (counter, number + 1, last)
            return counter, number
    try:
        last = count_hit(window.counter, window.timeout, window.lease)
    except (CacheUnavailable, ValueError):
        return None
    number = last - window.lease + 1
    with _lock:
        _leases[prefix] = (window.counter, number + 1, last)
    return window.counter, number


def api_key_remember_use(key: ApiKey) -> None:
    """Keep the remembered copy's last_used_at in step with the row the caller just updated."""
    entry = _entries.get(key.prefix)
    if entry is not None:
        entry.key.last_used_at = key.last_used_at


def _new_generation() -> None:
    generation = uuid.uuid4().hex
    set_and_publish = getattr(cache, "set_and_publish", None)
    if set_and_publish is None:
        cache.set(GENERATION_KEY, generation, timeout=None)
        return
    # Redis down: every process reads the database until it answers again (the cache logs the outage).
    with contextlib.suppress(CacheUnavailable):
        set_and_publish(GENERATION_KEY, generation, GENERATION_KEY)


def api_keys_changed() -> None:
    """A key or workspace changed: every process reloads keys from the database on its next request.

    Twice: now, and again once the surrounding transaction commits, since a process that reloads before
    the commit still reads the old row (and would keep it under the first new generation)."""
    _new_generation()
    transaction.on_commit(_new_generation, robust=True)


def api_keys_forget() -> None:
    """Drop what this process remembers (tests; the shared generation is untouched)."""
    with _lock:
        _entries.clear()
        _leases.clear()
    _pushed_generation.forget()


def _on_saved(sender: type, instance: object, created: bool = False, **kwargs: object) -> None:
    if not created:  # a new key or workspace is not remembered anywhere yet
        api_keys_changed()


def _on_deleted(sender: type, instance: object, **kwargs: object) -> None:
    api_keys_changed()


def connect_signals() -> None:
    """Model saves and deletes (the admin's edits, cascades) change the generation too."""
    from django.db.models.signals import post_delete, post_save

    from checkpoints.models import Workspace

    for model in (ApiKey, Workspace):
        post_save.connect(_on_saved, sender=model, dispatch_uid=f"api_key_cache.saved.{model.__name__}")
        post_delete.connect(_on_deleted, sender=model, dispatch_uid=f"api_key_cache.deleted.{model.__name__}")
