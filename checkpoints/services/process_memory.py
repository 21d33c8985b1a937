"""What a web process keeps between requests (`thread_memo`, the parts a save sent lately in
`stored_values`): plain dicts, bounded to their newest entries, changed under one lock."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_lock = threading.Lock()


def keep_newest(memo: dict[K, V], items: Iterable[tuple[K, V]], limit: int) -> None:
    """Put `items` into `memo` as its newest entries, forgetting the oldest beyond `limit`."""
    with _lock:
        for key, value in items:
            memo.pop(key, None)
            memo[key] = value
        while len(memo) > limit:
            del memo[next(iter(memo))]


def forget(memo: dict[K, V], keys: Iterable[K]) -> None:
    with _lock:
        for key in keys:
            memo.pop(key, None)


def forget_all(*memos: dict[Any, Any]) -> None:
    with _lock:
        for memo in memos:
            memo.clear()
