"""A JSON Patch (RFC 6902) shown side by side: for each operation, the value before and after at its path.

The "before" side is read from a working copy of the source document with the operations applied one at a
time, so paths that refer to the document as earlier operations left it (array indexes after a removal,
`move`) show the right value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonpatch
import jsonpointer

from checkpoints.dashboard.jsonview import RenderedJSON, render_json
from checkpoints.models import Checkpoint
from checkpoints.services.checkpoint_reads import checkpoint_field_changes

MAX_OPERATIONS = 500
# Per side of each row: enough to read a changed value, never a page-stalling dump.
VALUE_CAPS = {"max_nodes": 200, "max_depth": 12, "max_string": 500}

_MISSING = object()


@dataclass(frozen=True)
class DiffRow:
    op: str
    path: str
    from_path: str | None
    before: RenderedJSON | None
    after: RenderedJSON | None


@dataclass(frozen=True)
class SideBySide:
    rows: list[DiffRow]
    total: int
    read: int = 0  # operations read (at most the limit)
    unchanged: int = 0  # operations that leave the value at their path as it was ("move null → null")
    hidden: int = 0  # operations on paths the caller hides (LangGraph's bookkeeping)

    @property
    def truncated(self) -> bool:
        return self.total > self.read


def _resolve(document: Any, pointer: str) -> Any:
    try:
        return jsonpointer.resolve_pointer(document, pointer)
    except (jsonpointer.JsonPointerException, KeyError, IndexError, TypeError):
        return _MISSING


def _before_add(document: Any, pointer: str) -> Any:
    """`add` replaces an existing object member but inserts into an array (nothing was there before)."""
    parent_pointer, _, _ = pointer.rpartition("/")
    parent = _resolve(document, parent_pointer)
    return _resolve(document, pointer) if isinstance(parent, dict) else _MISSING


def _render(value: Any) -> RenderedJSON | None:
    return None if value is _MISSING else render_json(value, **VALUE_CAPS)


def side_by_side(
    source: Any,
    patch: list[dict[str, Any]],
    *,
    limit: int = MAX_OPERATIONS,
    hide: Callable[[str], bool] | None = None,
) -> SideBySide:
    """Rows of (operation, path, before, after) for the first `limit` operations of `patch`, without the
    operations that change nothing and those whose path `hide` hides (both counted).

    `source` is consumed: the operations are applied to it in place (callers pass a freshly decoded
    document; copying a large one first would cost as much as the diff).
    """
    working = source
    rows: list[DiffRow] = []
    unchanged = hidden = 0
    for operation in patch[:limit]:
        op, path = operation["op"], operation["path"]
        from_path = operation.get("from")
        if op == "test":
            continue
        # Before: what was at the path; after: what the operation leaves there.
        before = _before_add(working, path) if op in ("add", "move", "copy") else _resolve(working, path)
        if op in ("move", "copy"):
            after = _resolve(working, from_path or "")
        else:
            after = operation.get("value", _MISSING) if op != "remove" else _MISSING
        if hide is not None and hide(path):
            hidden += 1
        elif before is not _MISSING and before == after:
            unchanged += 1
        else:
            rows.append(DiffRow(op, path, from_path, _render(before), _render(after)))
        # In place: copying a multi-megabyte document once per operation would stall the page.
        working = jsonpatch.JsonPatch([operation]).apply(working, in_place=True)
    return SideBySide(rows, len(patch), min(len(patch), limit), unchanged, hidden)


# What LangGraph keeps for its own scheduling, per document: hidden from a LangGraph checkpoint's diff unless
# asked for (docs/dashboard.md, "The diff").
LANGGRAPH_BOOKKEEPING = {
    "state": frozenset(
        {"channel_versions", "versions_seen", "updated_channels", "v", "ts", "id", "pending_sends"}
    ),
    "metadata": frozenset({"step", "parents", "thread_id", "checkpoint_ns", "checkpoint_id"}),
}


def is_langgraph_bookkeeping(path: str) -> bool:
    """Whether a patch path (/<document>/<key>/…) lies in LangGraph's bookkeeping."""
    parts = path.split("/")
    return len(parts) > 2 and parts[2] in LANGGRAPH_BOOKKEEPING.get(parts[1], ())


# How the diff page labels the fields a diff compares (checkpoint_reads.DIFF_FIELDS).
FIELD_LABELS = {
    "agent_id": "Agent",
    "step_index": "Step",
    "step_name": "Step name",
    "parent_id": "Parent",
    "namespace": "Namespace",
    "run_id": "Run",
    "handoff_from": "Handed off from",
}


@dataclass(frozen=True)
class FieldChange:
    field: str
    label: str
    before: str | None
    after: str | None


def field_changes(source: Checkpoint | None, checkpoint: Checkpoint) -> list[FieldChange]:
    """The compared fields whose values differ between `source` (None: an empty document) and `checkpoint`,
    then "metadata" (without values) when the metadata documents differ: their changes are the patch's
    rows under /metadata. Absent values are None."""
    changes = [
        FieldChange(
            change["field"], FIELD_LABELS[change["field"]], _shown(change["before"]), _shown(change["after"])
        )
        for change in checkpoint_field_changes(checkpoint=checkpoint, against=source)
    ]
    before_metadata = source.metadata if source is not None else None
    if before_metadata != checkpoint.metadata:
        changes.append(FieldChange("metadata", "Metadata", None, None))
    return changes


def _shown(value: Any) -> str | None:
    return None if value is None else str(value)
