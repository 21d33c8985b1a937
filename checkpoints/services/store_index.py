"""Exact search by meaning over a workspace's store items, without pgvector (docs/store.md, "Search by
meaning").

Each web process keeps, per workspace and vector dimension, a snapshot of the items' unit vectors in one
float32 matrix, the items sorted by namespace so that every namespace prefix is one or two contiguous
ranges (found by bisection). A search multiplies the range by the query vector (numpy), takes each item's
best vector, and picks the best candidates; their rows are then read from the database with the search's
own conditions (live, prefix, filter), so an item deleted, expired or filtered out since the snapshot is
never answered — the ranking is exact over the items the search selects.

The snapshot is kept current by a token in the shared cache that every item write replaces (after commit):
on a new token the process reads only the items updated since its snapshot (minus a margin for writes
committed late) into a small second segment; past a quarter of the snapshot's size it is rebuilt. The
snapshots are bounded by `CAIRN_STORE_VECTOR_CACHE_ITEMS` (least recently used go first)."""

from __future__ import annotations

import threading
import uuid
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import StoreItem, Workspace
from checkpoints.models.store import NAMESPACE_SEPARATOR
from checkpoints.services.store_vectors import HEADER_BYTES, dimension_of, pack, query_vector_for

LATE_COMMIT_MARGIN = timedelta(minutes=1)  # longer than any store write transaction
_lock = threading.Lock()
Row = tuple[int, str, bytes | None]
_snapshots: OrderedDict[tuple[int, int], _Snapshot] = OrderedDict()


def _token_key(workspace_id: int) -> str:
    return f"cairn:store-vectors:{workspace_id}"


# Workspaces this thread wrote items of in a transaction not yet committed: its own searches must see those
# writes (a batch's put, then its search), which no other process may cache.
_uncommitted = threading.local()


def _written_here() -> set[int]:
    if not hasattr(_uncommitted, "workspaces"):
        _uncommitted.workspaces = set()
    workspaces: set[int] = _uncommitted.workspaces
    return workspaces


def vectors_changed(workspace_id: int) -> None:
    """Call inside the transaction of an item write: once it commits, every process refreshes its snapshot."""
    _written_here().add(workspace_id)

    def committed() -> None:
        _written_here().discard(workspace_id)
        cache.set(_token_key(workspace_id), uuid.uuid4().hex, None)

    transaction.on_commit(committed)


def _current_token(workspace_id: int) -> tuple[str, bool]:
    """The workspace's token, and whether it was missing (then no snapshot can be trusted: the writes since
    it are unknown, as after the shared cache was emptied)."""
    token = cache.get(_token_key(workspace_id))
    if token is not None:
        return str(token), False
    cache.add(_token_key(workspace_id), uuid.uuid4().hex, None)
    return str(cache.get(_token_key(workspace_id))), True


@dataclass
class _Segment:
    """Items (sorted by namespace in the base segment) and their unit vectors, `starts[i]` the first row of
    item i in `matrix` (one row per embedded text)."""

    pks: np.ndarray
    namespaces: list[str]
    starts: np.ndarray
    matrix: np.ndarray

    @classmethod
    def build(cls, rows: list[Row], dimension: int) -> _Segment:
        chosen = [
            (pk, ns, blob) for pk, ns, blob in rows if blob is not None and dimension_of(blob) == dimension
        ]
        chosen.sort(key=lambda r: (r[1], r[0]))
        header = HEADER_BYTES
        counts = [(len(blob) - header) // (4 * dimension) for _pk, _ns, blob in chosen]
        flat = b"".join(blob[header:] for _pk, _ns, blob in chosen)
        raw = np.frombuffer(flat, dtype="<f4").reshape(-1, dimension)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        matrix = (raw / np.where(norms == 0, 1, norms)).astype(np.float32)
        starts = (
            np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
            if counts
            else np.zeros(0, np.int64)
        )
        return cls(np.array([r[0] for r in chosen], dtype=np.int64), [r[1] for r in chosen], starts, matrix)

    def ranges(self, prefix: str) -> list[tuple[int, int]]:
        """Item index ranges of the namespace `prefix` and of those below it (everything for "")."""
        if not prefix:
            return [(0, len(self.namespaces))]
        below = prefix + NAMESPACE_SEPARATOR
        same = (bisect_left(self.namespaces, prefix), bisect_right(self.namespaces, prefix))
        # Namespaces below `prefix` start with "prefix." and sort together, up to "prefix/" ("/" follows ".").
        under = (bisect_left(self.namespaces, below), bisect_left(self.namespaces, prefix + "/"))
        return [same, under]

    def scores(self, lo: int, hi: int, query: np.ndarray) -> np.ndarray:
        """Each item's best cosine similarity, for items lo..hi."""
        if lo >= hi:
            return np.zeros(0, dtype=np.float32)
        first = int(self.starts[lo])
        last = int(self.starts[hi]) if hi < len(self.starts) else len(self.matrix)
        similarities = self.matrix[first:last] @ query
        if last - first == hi - lo:  # one vector per item
            return similarities
        return np.maximum.reduceat(similarities, self.starts[lo:hi] - first)


@dataclass
class _Snapshot:
    token: str
    loaded_at: datetime
    base: _Segment
    delta: _Segment
    # Base items a later write replaced (their vectors are in `delta`, or gone).
    superseded: set[int] = field(default_factory=set)

    @property
    def size(self) -> int:
        return len(self.base.pks) + len(self.delta.pks)


def _rows(workspace: Workspace, since: datetime | None = None) -> list[Row]:
    """(pk, namespace, vectors) of the workspace's indexed items; with `since`, of every item updated since
    (an item whose vectors went is then superseded with none)."""
    items = StoreItem.objects.filter(workspace=workspace)
    items = items.filter(updated_at__gte=since) if since is not None else items.filter(vectors__isnull=False)
    rows = items.values_list("pk", "namespace", "vectors").iterator()
    return [(pk, ns, bytes(blob) if blob is not None else None) for pk, ns, blob in rows]


def _snapshot(workspace: Workspace, dimension: int) -> _Snapshot:
    key = (workspace.pk, dimension)
    token, unknown_history = _current_token(workspace.pk)
    with _lock:
        snapshot = None if unknown_history else _snapshots.get(key)
        if snapshot is not None:
            _snapshots.move_to_end(key)
    own_writes = workspace.pk in _written_here()
    if snapshot is not None and snapshot.token == token and not own_writes:
        return snapshot
    started = timezone.now()
    remember = _remember if not own_writes else lambda _key, fresh: fresh
    if snapshot is not None:
        changed = _rows(workspace, since=min(snapshot.loaded_at, started) - LATE_COMMIT_MARGIN)
        kept = {pk: (pk, ns, blob) for pk, ns, blob in _delta_rows(snapshot)}
        kept.update((row[0], row) for row in changed)
        if len(kept) * 4 <= len(snapshot.base.pks):
            snapshot = _Snapshot(
                token, started, snapshot.base, _Segment.build(list(kept.values()), dimension),
                superseded=snapshot.superseded | set(kept),
            )  # fmt: skip
            return remember(key, snapshot)
    snapshot = _Snapshot(
        token, started, _Segment.build(_rows(workspace), dimension), _Segment.build([], dimension)
    )
    return remember(key, snapshot)


def _delta_rows(snapshot: _Snapshot) -> list[Row]:
    delta = snapshot.delta
    rows: list[Row] = []
    for index, pk in enumerate(delta.pks):
        first = int(delta.starts[index])
        last = int(delta.starts[index + 1]) if index + 1 < len(delta.starts) else len(delta.matrix)
        rows.append((int(pk), delta.namespaces[index], pack(delta.matrix[first:last].tolist())))
    return rows


def _remember(key: tuple[int, int], snapshot: _Snapshot) -> _Snapshot:
    with _lock:
        _snapshots[key] = snapshot
        _snapshots.move_to_end(key)
        while (
            len(_snapshots) > 1
            and sum(s.size for s in _snapshots.values()) > settings.CAIRN_STORE_VECTOR_CACHE_ITEMS
        ):
            _snapshots.popitem(last=False)
    return snapshot


def forget_snapshots() -> None:
    with _lock:
        _snapshots.clear()


def _candidates(snapshot: _Snapshot, prefix: str, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pks, scores) of every snapshot item under `prefix`."""
    pks, scores = [], []
    for segment, is_base in ((snapshot.base, True), (snapshot.delta, False)):
        for lo, hi in segment.ranges(prefix):
            if lo >= hi:
                continue
            part_pks, part_scores = segment.pks[lo:hi], segment.scores(lo, hi, query)
            if is_base and snapshot.superseded:
                alive = ~np.isin(part_pks, np.fromiter(snapshot.superseded, dtype=np.int64))
                part_pks, part_scores = part_pks[alive], part_scores[alive]
            pks.append(part_pks)
            scores.append(part_scores)
    if not pks:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    return np.concatenate(pks), np.concatenate(scores)


def _best(pks: np.ndarray, scores: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Indexes of the candidates ranked start..stop (best score first, then the newer item), found by a
    partial sort of the best `stop` only."""
    stop = min(stop, len(pks))
    top = np.argpartition(-scores, stop - 1)[:stop] if stop < len(pks) else np.arange(len(pks))
    ordered = top[np.lexsort((-pks[top], -scores[top]))]
    return ordered[start:stop]


def ranked(
    workspace: Workspace,
    items: Any,
    *,
    prefix: str,
    query: str | None,
    query_vector: list[float] | None,
    limit: int,
    offset: int,
    filtered: bool,
) -> list[tuple[StoreItem, float | None]]:
    """The selected `items` (a queryset: live, under `prefix`, filtered) ranked by meaning, best first, then
    the unindexed ones newest first; without any query vector, newest first with no score."""
    vector = query_vector_for(query, query_vector)
    if vector is None:
        return [(item, None) for item in items.order_by("-updated_at", "-pk")[offset : offset + limit]]
    pks, scores = _candidates(_snapshot(workspace, len(vector)), prefix, vector)
    if not len(pks) and query_vector is not None and items.filter(vectors__isnull=False).exists():
        message = f"The query vector has {len(vector)} dimensions; the items here were embedded otherwise."
        raise ValidationFailed(message, {"fields": {"query_vector": [message]}})
    if filtered and len(pks):
        pks_selected = np.fromiter(items.values_list("pk", flat=True).iterator(), dtype=np.int64)
        keep = np.isin(pks, pks_selected)
        pks, scores = pks[keep], scores[keep]
    wanted = offset + limit
    found: list[tuple[StoreItem, float]] = []
    taken = 0
    while len(found) < wanted and taken < len(pks):
        chunk = _best(pks, scores, taken, taken + max(2 * (wanted - len(found)), 32))
        taken += len(chunk)
        rows = items.in_bulk([int(pk) for pk in pks[chunk]])
        found.extend((rows[int(pks[i])], float(scores[i])) for i in chunk if int(pks[i]) in rows)
    page: list[tuple[StoreItem, float | None]] = list(found[offset:wanted])
    if len(page) < limit:
        skip = max(0, offset - len(pks))
        rest = items.filter(vectors__isnull=True).order_by("-updated_at", "-pk")
        page += [(item, None) for item in rest[skip : skip + limit - len(page)]]
    return page
