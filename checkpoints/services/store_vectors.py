"""Vectors of store items for search by meaning (docs/store.md, "Search by meaning").

An item's vectors are packed as bytes: the dimension (uint32, little-endian), then one float32 vector per
embedded text. The client may send them (the SDK's `embed`); ranking is by cosine similarity, an item
scoring its best text, exact over every indexed item the search selects."""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Sequence
from typing import Any

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import StoreItem, Workspace

_DIMENSION = struct.Struct("<I")


def pack(vectors: Sequence[Sequence[float]]) -> bytes | None:
    if not vectors:
        return None
    dimension = len(vectors[0])
    flat = array("f", (float(x) for vector in vectors for x in vector))
    return _DIMENSION.pack(dimension) + flat.tobytes()


def unpack(blob: bytes) -> list[array[float]]:
    (dimension,) = _DIMENSION.unpack_from(blob)
    flat = array("f")
    flat.frombytes(bytes(blob[_DIMENSION.size :]))
    return [flat[i : i + dimension] for i in range(0, len(flat), dimension)]


def item_vectors(
    value: dict[str, Any], *, index: list[str] | bool | None, vectors: list[list[float]] | None
) -> bytes | None:
    """The packed vectors to store with an item: the client's, or none (`index` false or no vectors)."""
    if index is False:
        return None
    return pack(vectors) if vectors else None


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def ranked(
    workspace: Workspace,
    items: Any,
    *,
    query: str | None,
    query_vector: list[float] | None,
    limit: int,
    offset: int,
) -> list[tuple[StoreItem, float | None]]:
    """The selected items ranked by meaning: indexed items by score, best first, then the others (no
    score) newest first. Without a query vector (and no server embedding), newest first."""
    if query_vector is None:
        page = list(items.order_by("-updated_at", "-pk")[offset : offset + limit])
        return [(item, None) for item in page]
    scored: list[tuple[float, int]] = []
    for pk, blob in items.filter(vectors__isnull=False).values_list("pk", "vectors").iterator():
        stored = unpack(blob)
        if len(stored[0]) != len(query_vector):
            raise ValidationFailed("The query vector's dimension differs from the stored vectors'.")
        scored.append((max(_cosine(v, query_vector) for v in stored), pk))
    scored.sort(key=lambda pair: (-pair[0], -pair[1]))
    page = scored[offset : offset + limit]
    rows = StoreItem.objects.in_bulk([pk for _score, pk in page])
    found: list[tuple[StoreItem, float | None]] = [(rows[pk], score) for score, pk in page]
    if len(page) < limit:
        rest = items.filter(vectors__isnull=True).order_by("-updated_at", "-pk")
        skip = max(0, offset - len(scored))
        found += [(item, None) for item in rest[skip : skip + limit - len(page)]]
    return found
