"""The head-state cache in front of the database (Redis in production, local memory otherwise).

Keys embed the thread's `state_version`, which every head-moving write bumps in its own transaction. A reader
always loads the thread row first (it needs it for the 404 check anyway), so it can only ever ask for the key
of the current version: an entry written for an older version is never read again, and the cache cannot be
staler than the database. Saves do not write the cache (a save's only Redis round trip is its key's check):
the first read of a new head fills it, after its response has been sent (`after_response`).

A cached head carries its own expiry: if it has expired since it was cached, the reader falls back to the
database. Every cache error degrades to a database read (see checkpoints.cache).
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from django.core.cache import cache

from checkpoints.after_response import after_response
from checkpoints.models import Checkpoint, Thread
from checkpoints.parts import enabled
from checkpoints.services.checkpoint_reads import checkpoint_head

HEAD_CACHE_SECONDS = 3600
# Bigger heads are read from the database: a multi-megabyte value would cost Redis memory and a pickling
# pass on every save for little gain over one indexed row read.
HEAD_CACHE_MAX_BYTES = 1024 * 1024


def _key(thread: Thread, namespace: str) -> str:
    # created_at guards against a reused primary key (a restored database, a fresh test database) meeting
    # entries a previous life of the same pk left in a shared Redis.
    digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:16]
    return f"head:{thread.pk}:{thread.created_at.timestamp():.6f}:{thread.state_version}:{digest}"


def head_cache_get(thread: Thread, namespace: str, now: datetime) -> Checkpoint | None:
    """The cached head for the thread's current version, if present and still readable at `now`."""
    cached = cache.get(_key(thread, namespace))
    if isinstance(cached, Checkpoint) and cached.is_readable(now):
        return cached
    return None


def head_read_through(thread: Thread, namespace: str, now: datetime) -> Checkpoint | None:
    """The head of `namespace` (None: no readable checkpoint): the cached one, else the database's, which
    is then remembered for the thread's current version."""
    if not enabled("head_cache"):
        return checkpoint_head(thread=thread, namespace=namespace, now=now)
    head = head_cache_get(thread, namespace, now)
    if head is None:
        head = checkpoint_head(thread=thread, namespace=namespace, now=now)
        if head is not None:
            _put_after_response(_key(thread, namespace), head)
    return head


def _put_after_response(key: str, head: Checkpoint) -> None:
    if head.size_bytes <= HEAD_CACHE_MAX_BYTES:
        after_response(lambda: cache.set(key, head, HEAD_CACHE_SECONDS))
