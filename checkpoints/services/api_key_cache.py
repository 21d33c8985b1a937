"""API keys remembered per process, so an authenticated request costs no database query.

Each process keeps the keys it has loaded (with their workspace), tagged with the *key generation* it read
from the shared cache (Redis in production) before loading them. Every change to a key or a workspace made
through Cairn (revocation, expiry, scope, throttle rate, retention settings, deletion; services, admin and
dashboard alike) stores a new random generation once its transaction commits, so every process reloads on
its next request: revocation takes effect at once everywhere. When the shared cache cannot answer, nothing
is trusted and every request reads the database, as before. A remembered key is also reloaded after
`CAIRN_API_KEY_CACHE_SECONDS`, the bound for changes written around Cairn (raw SQL). See the README,
"Authentication".
"""

from __future__ import annotations

import copy
import hmac
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from checkpoints.cache import CacheUnavailable
from checkpoints.models import ApiKey

GENERATION_KEY = "apikeys:generation"
# A key's rate window, as the throttle names it: (counter key, timeout in seconds).
WindowOf = Callable[[ApiKey], tuple[str, int]]


@dataclass(frozen=True)
class _Entry:
    key: ApiKey
    generation: str
    loaded_at: float


_entries: dict[str, _Entry] = {}
_lock = threading.Lock()


def _current_generation() -> str | None:
    """The shared generation, created if missing (a fresh or flushed cache); None if the cache is down."""
    generation = cache.get(GENERATION_KEY)
    if generation is None:
        cache.add(GENERATION_KEY, uuid.uuid4().hex, timeout=None)
        generation = cache.get(GENERATION_KEY)
    return generation if isinstance(generation, str) else None


def api_key_cached(prefix: str, *, secret_hash: str, count_in: WindowOf | None = None) -> ApiKey | None:
    """The key with this prefix (workspace loaded), from this process's memory when still current, else
    from the database. A copy: callers may change it without touching what other requests see.

    `count_in` names a rate window (counter key, timeout) of the remembered key: when the secret matches
    that key, the window's hit is counted in the same round trip that reads the generation, and the result
    is left on the returned key as `window_hits` (the throttle's count, without a round trip of its own).
    """
    entry = _entries.get(prefix)
    hits = None
    if entry is not None and count_in is not None and hmac.compare_digest(entry.key.secret_hash, secret_hash):
        generation, hits = _generation_and_hit(count_in(entry.key))
    else:
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
    duplicate = copy.copy(key)
    duplicate.workspace = copy.copy(key.workspace)
    duplicate.window_hits = hits
    return duplicate


def _generation_and_hit(window: tuple[str, int]) -> tuple[str | None, tuple[str, int] | None]:
    """The generation and one hit counted in `window`, in one round trip where the cache can (Redis)."""
    get_and_incr_window = getattr(cache, "get_and_incr_window", None)
    if get_and_incr_window is None:
        return _current_generation(), None
    window_key, timeout = window
    try:
        generation, count = get_and_incr_window(GENERATION_KEY, window_key, timeout)
    except CacheUnavailable:
        return None, None
    if not isinstance(generation, str):
        generation = _current_generation()  # a fresh or flushed cache: create it
    return generation, (window_key, count)


def api_key_remember_use(key: ApiKey) -> None:
    """Keep the remembered copy's last_used_at in step with the row the caller just updated."""
    entry = _entries.get(key.prefix)
    if entry is not None:
        entry.key.last_used_at = key.last_used_at


def _new_generation() -> None:
    cache.set(GENERATION_KEY, uuid.uuid4().hex, timeout=None)


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
