"""What a save is given: a checkpoint's three documents as canonical text (`Payloads`, exactly what is
hashed) and its record fields (`RecordFields`, declared once for every caller), with the refusals of
what cannot be stored faithfully. The save itself is `checkpoint_save`'s."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Final, Required, TypedDict

from checkpoints.exceptions import ValidationFailed
from checkpoints.integrity import CanonicalEncodingError, canonical_json
from checkpoints.models import Checkpoint
from checkpoints.packing import Packed
from checkpoints.storage.stored_values import packed_documents


class Unset(Enum):
    UNSET = "UNSET"


UNSET: Final = Unset.UNSET
"""Marks an argument the caller did not send (as opposed to an explicit null)."""

# A NUL escape that is not itself an escaped backslash followed by "u0000".
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def invalid_field(field: str, message: str, **extra: Any) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", {"fields": {field: [message]}, **extra})


@dataclass(frozen=True)
class Payloads:
    """The canonical JSON text of a checkpoint's three documents (exactly what is hashed, and stored whole
    or packed: docs/storage.md). `values` are the state and context as decoded, when the caller has them
    (packing then needs no decoding)."""

    state: str
    context: str
    metadata: str
    values: tuple[Any, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def size_bytes(self) -> int:
        return sum(len(text.encode("utf-8")) for text in (self.state, self.context, self.metadata))

    def packed(self) -> dict[str, Packed]:
        """The documents worth storing packed, packed."""
        values = None if self.values is None else dict(zip(("state", "context"), self.values, strict=True))
        return packed_documents({"state": self.state, "context": self.context}, values)


def encode_document(name: str, value: Any) -> str:
    """The canonical JSON text of one document, or ValidationFailed naming the field."""
    try:
        return canonical_json(value)
    except CanonicalEncodingError as exc:
        raise invalid_field(name, f"Not storable as JSON: {exc}") from exc


def encode_payloads(state: Any, context: Any, metadata: Any) -> Payloads:
    """Canonically encode the documents, refusing what cannot be stored faithfully."""
    if state is None:
        raise invalid_field("state", "This field may not be null.")
    payloads = Payloads(
        state=encode_document("state", state),
        context=encode_document("context", context),
        metadata=encode_document("metadata", metadata),
        values=(state, context),
    )
    # Metadata is also queried as jsonb (filters, GIN index), and jsonb cannot hold U+0000. State and
    # context are only ever text, so NUL is fine there (stored escaped, as \u0000).
    if _NUL_ESCAPE.search(payloads.metadata):
        raise invalid_field("metadata", "NUL characters are not allowed in metadata.")
    return payloads


class RecordFields(TypedDict, total=False):
    """What a save says about a checkpoint besides its three documents: the keyword arguments of
    `checkpoint_save` and `save_encoded`, declared once. Absent fields take the defaults in `AS_SENT` or
    are decided by the save (id, parent, step, expiry; see `checkpoint_save`)."""

    agent_id: Required[str]
    namespace: str
    checkpoint_id: str | None
    parent_id: str | Unset | None
    framework: str
    schema_version: str
    step_index: int | None
    step_name: str | None
    run_id: str | None
    handoff_target: str | None
    handoff_from: str | None
    ttl_seconds: int | Unset | None
    pinned: bool
    checksum: str | None
    created_at: datetime | None
    expected_head: tuple[str, ...] | Unset
    user_id: str | None
    written_by: str


# The record fields stored as the save sends them, with their defaults; an idempotent retry must send the
# same values (with agent_id).
AS_SENT: dict[str, Any] = {
    "framework": Checkpoint.Framework.CUSTOM,
    "schema_version": "1.0",
    "step_name": None,
    "run_id": None,
    "handoff_target": None,
    "handoff_from": None,
}


def record_fields_of(checkpoint: Checkpoint) -> RecordFields:
    """A stored checkpoint's own record fields: what saving a copy of it sends."""
    fields = RecordFields(
        agent_id=checkpoint.agent_id,
        namespace=checkpoint.namespace,
        checkpoint_id=checkpoint.checkpoint_id,
        parent_id=checkpoint.parent_checkpoint_id,
        step_index=checkpoint.step_index,
        created_at=checkpoint.created_at,
        pinned=checkpoint.pinned,
    )
    fields.update({name: getattr(checkpoint, name) for name in AS_SENT})  # type: ignore[typeddict-item]
    return fields
