"""Server-generated ids: UUIDv7 (RFC 9562), strictly monotonic within a process even inside one millisecond.

The 74 bits after the timestamp are random for the first id of a millisecond; later ids in the same
millisecond add a random increment to the previous value (RFC 9562 section 6.2, method 2), so ids sort in
generation order and stay unguessable. If the clock goes backwards we keep counting from the last timestamp.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid

_RANDOM_BITS = 74
_RANDOM_LIMIT = 1 << _RANDOM_BITS
_lock = threading.Lock()
_last_ms = 0
_last_random = 0


def _next_fields() -> tuple[int, int]:
    global _last_ms, _last_random
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms > _last_ms:
            # Leave the top bit clear so increments within this millisecond have plenty of room.
            _last_ms, _last_random = now_ms, secrets.randbits(_RANDOM_BITS - 1)
        else:
            _last_random += secrets.randbits(32) + 1
            if _last_random >= _RANDOM_LIMIT:
                _last_ms, _last_random = _last_ms + 1, secrets.randbits(_RANDOM_BITS - 1)
        return _last_ms, _last_random


def uuid7() -> uuid.UUID:
    """A new UUIDv7, greater than every UUIDv7 this process generated before."""
    unix_ms, random = _next_fields()
    rand_a = random >> 62  # top 12 bits
    rand_b = random & ((1 << 62) - 1)  # low 62 bits
    value = (unix_ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= rand_a << 64
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand_b
    return uuid.UUID(int=value)


def new_id() -> str:
    """A new UUIDv7 as its canonical string (what ids look like in the API)."""
    return str(uuid7())
