"""The parts of packed checkpoint documents and pending-write values, stored once per workspace by content
(docs/storage.md; the packing itself is `checkpoints.packing`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, ClassVar, cast

from django.db import models
from django.utils import timezone

from checkpoints.models.workspace import Workspace
from checkpoints.packing import MissingPart, assemble, digests, is_packed

if TYPE_CHECKING:
    from checkpoints.models.checkpoint import Checkpoint, PendingWrite

# The documents that may be packed (metadata is also queried as jsonb, so it is always stored whole).
PACKED_FIELDS = ("state", "context")


class StoredValue(models.Model):
    """One part of one or more packed documents of a workspace, keyed by its digest (`checkpoints.packing`:
    the first 16 bytes of the SHA-256 of its text; the whole hash in rows stored before 2026-12-02).

    Parts are never shared across workspaces: a save cannot learn whether another tenant stored the same
    text. `used_at` is when a save last relied on the part; the collector
    (`checkpoints.storage.stored_values`) only deletes parts no checkpoint names and no save relied on
    within its grace period.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    digest = models.BinaryField(max_length=32)
    body = models.TextField()
    size_bytes = models.BigIntegerField()
    used_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["workspace", "digest"], name="storedvalue_unique_digest"),
        ]
        indexes: ClassVar = [models.Index(fields=["workspace", "used_at"], name="storedvalue_ws_used")]

    def __str__(self) -> str:
        return f"{bytes(self.digest).hex()[:16]}… ({self.size_bytes} bytes)"


def parts_of(workspace_id: int, wanted: Iterable[bytes]) -> dict[bytes, str]:
    """The stored text of the wanted parts of one workspace (one query; missing ones are left out)."""
    wanted = list(wanted)
    if not wanted:
        return {}
    rows = StoredValue.objects.filter(workspace_id=workspace_id, digest__in=wanted).values_list(
        "digest", "body"
    )
    return {bytes(digest): body for digest, body in rows}


def unpack(checkpoints: Iterable[Checkpoint]) -> None:
    """Put the parts back into the packed documents of loaded checkpoints: one query per workspace.

    A document naming a part that is missing keeps its packed text and is listed in `missing_parts`; it then
    no longer hashes to its checksum, so every read refuses it as altered (409), as it would a tampered row.
    """
    by_workspace: dict[int, list[Checkpoint]] = defaultdict(list)
    for checkpoint in checkpoints:
        loaded = checkpoint.__dict__
        if any(is_packed(loaded.get(field)) for field in PACKED_FIELDS):
            by_workspace[checkpoint.workspace_id].append(checkpoint)
    for workspace_id, packed in by_workspace.items():
        wanted = digests(c.__dict__.get(field) for c in packed for field in PACKED_FIELDS)
        parts = parts_of(workspace_id, wanted)
        for checkpoint in packed:
            put_parts_back(checkpoint, parts)


def put_parts_back(checkpoint: Checkpoint, parts: Mapping[bytes, str]) -> None:
    """Assemble the packed documents of one loaded checkpoint from `parts` (see `unpack`)."""
    for field in PACKED_FIELDS:
        stored = checkpoint.__dict__.get(field)
        if not isinstance(stored, str) or not is_packed(stored):
            continue
        try:
            setattr(checkpoint, field, assemble(stored, parts))
        except MissingPart as missing:
            if missing.args[0] not in checkpoint.missing_parts:  # read again: listed once
                checkpoint.missing_parts = (*checkpoint.missing_parts, missing.args[0])


def whole_texts(
    workspace_id: int, texts: Sequence[str | None], parts: Mapping[bytes, str] | None = None
) -> list[str | None]:
    """`texts` with their parts put back: the parts in `parts` as given, the others read in one query. A
    text naming a part that is missing stays packed (`is_packed`), for its reader to refuse."""
    packed = [text for text in texts if is_packed(text)]
    if not packed:
        return list(texts)
    known = dict(parts or {})
    known.update(parts_of(workspace_id, digests(packed) - known.keys()))
    whole: list[str | None] = []
    for text in texts:
        if text is not None and is_packed(text):
            with suppress(MissingPart):
                text = assemble(text, known)
        whole.append(text)
    return whole


def unpack_writes(
    writes: Sequence[PendingWrite], workspace_id: int, parts: Mapping[bytes, str] | None = None
) -> None:
    """Put the parts back into loaded pending writes' values (`whole_texts`)."""
    for write, value in zip(writes, whole_texts(workspace_id, [w.value for w in writes], parts), strict=True):
        write.value = value  # type: ignore[assignment]  # a write's value is never None


def unpack_loaded(rows: Iterable[Any]) -> None:
    """`unpack` the checkpoints among rows a queryset gave (`values()` rows are left as they are)."""
    unpack(cast("Iterable[Checkpoint]", [row for row in rows if isinstance(row, models.Model)]))


def unpacked_in_batches(rows: Iterator[Any], size: int = 100) -> Iterator[Any]:
    """Rows streamed from a queryset, their packed documents whole, unpacked `size` at a time."""
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            unpack_loaded(batch)
            yield from batch
            batch = []
    unpack_loaded(batch)
    yield from batch
