"""Vectors of store items for search by meaning (docs/store.md, "Search by meaning").

Which texts of a value are embedded follows LangGraph's `fields` paths: `$` (the default) is the whole
value as JSON, `a.b` a nested field, `a[0]`/`a[-1]`/`a[*]` list elements, `*` every field, `a.{b,c.d}`
several fields of an object (as in LangGraph, the path ends at the braces); a string is
embedded as it is, a number or boolean as its text, an object or list as JSON. The vectors are the client's
(the SDK's `embed`) or the server's embedder's (checkpoints/llm/embeddings.py), packed as bytes: the
dimension (uint32, little-endian), then one float32 vector per text."""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from checkpoints.llm.embeddings import get_embedder

_DIMENSION = struct.Struct("<I")
HEADER_BYTES = _DIMENSION.size
_TOKEN = re.compile(r"\[([^\]]*)\]|\{([^}]*)\}|([^.\[{]+)")
DEFAULT_FIELDS = ("$",)


def pack(vectors: Sequence[Sequence[float]]) -> bytes | None:
    if not vectors:
        return None
    matrix = np.asarray(vectors, dtype="<f4")
    return _DIMENSION.pack(matrix.shape[1]) + matrix.tobytes()


def unpack(blob: bytes) -> np.ndarray:
    """The vectors of a packed blob, one row each."""
    (dimension,) = _DIMENSION.unpack_from(blob)
    return np.frombuffer(bytes(blob), dtype="<f4", offset=_DIMENSION.size).reshape(-1, dimension)


def dimension_of(blob: bytes) -> int:
    return int(_DIMENSION.unpack_from(blob)[0])


def _as_text(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool | int | float):
        return [json.dumps(value)]
    return [json.dumps(value, sort_keys=True, ensure_ascii=False)]


def texts_at(value: Any, path: str) -> list[str]:
    """The texts `path` selects in `value` (none when it selects nothing)."""
    if path in ("", "$"):
        return _as_text(value)
    current = [value]
    for match in _TOKEN.finditer(path):
        index, fields, name = match.groups()
        if fields is not None:
            # LangGraph's multi-field selection: each field a dotted path of keys; nothing after it applies.
            wanted = [field.strip() for field in fields.split(",") if field.strip()]
            current = [found for node in current for field in wanted for found in _at_keys(node, field)]
            break
        selected: list[Any] = []
        for node in current:
            if index is not None and isinstance(node, list):
                if index == "*":
                    selected.extend(node)
                elif re.fullmatch(r"-?\d+", index) and -len(node) <= int(index) < len(node):
                    selected.append(node[int(index)])
            elif name == "*":
                selected.extend(
                    node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
                )
            elif name is not None and isinstance(node, dict) and name in node:
                selected.append(node[name])
        current = selected
    return [text for node in current for text in _as_text(node)]


def _at_keys(node: Any, dotted: str) -> list[Any]:
    """The value at a dotted path of object keys in `node` (none if a key is missing or it is null)."""
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return []
        node = node[key]
    return [] if node is None else [node]


def item_vectors(
    value: dict[str, Any], *, index: list[str] | bool | None, vectors: list[list[float]] | None
) -> bytes | None:
    """The packed vectors to store with an item: the client's, else the server embedder's of the value's
    `index` fields (default the whole value); none when `index` is false or nothing is embedded."""
    if index is False:
        return None
    if vectors:
        return pack(vectors)
    embedder = get_embedder()
    if embedder is None:
        return None
    paths = index if isinstance(index, list) else DEFAULT_FIELDS
    texts = [text for path in paths for text in texts_at(value, path)]
    return pack(embedder.embed(texts)) if texts else None


def query_vector_for(query: str | None, query_vector: list[float] | None) -> np.ndarray | None:
    """The search's query as a unit vector: the client's, else the server embedder's (None: neither)."""
    if query_vector is None:
        embedder = get_embedder()
        if embedder is None or not query:
            return None
        query_vector = embedder.embed([query])[0]
    vector = np.asarray(query_vector, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
