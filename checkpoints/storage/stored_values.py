"""The value table's writes: storing the parts a save or a pending write names, and collecting parts nothing
names (docs/storage.md). Reads fill parts in through `checkpoints.models.value.unpack`; `stored_bytes` and its
helpers measure what documents occupy as stored, for the storage accounting.

The collector may run while saves reuse parts. Every save marks the parts it names as used (`used_at`)
unless a save already did within half the grace period, in the statement that stores the missing ones and
inserts its checkpoint (`save_sql.insert_checkpoint`); the collector deletes only parts that no checkpoint
named when it looked and that no save used within the grace period, and the delete re-checks `used_at` row
by row. So a part a save relies on is either kept, or deleted before the save's statement, which then
stores it again. Other writers (copies, the conversion) store parts in the transaction that inserts or
updates the rows naming them, which must commit within half the grace period; pending writes store theirs
in their transaction too (`writes_packed`).
Copies of pending writes name the same parts without storing them: they hold the source thread's lock,
so its rows, which name those parts, stay until the copy has committed.

A save on PostgreSQL outside a transaction does not send the parts its process sent within a quarter of the
grace period (`parts_to_store(..., skip_sent_lately=True)`): it names them, and its statement writes only if
they are all still stored and it runs within a quarter of the grace period of the save's start. A part sent
at `t` was left with `used_at >= t - grace/2`, so no collector that looks before the save commits can delete
it before `t + grace/2`, later than that deadline (docs/storage.md).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cachetools import LRUCache
from django.conf import settings
from django.db.models import Case, Count, Q, QuerySet, Sum, Value, When
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Coalesce, Left, StrIndex
from django.db.models.lookups import Exact
from django.utils import timezone

from checkpoints.models import Checkpoint, PendingWrite, StoredValue, Workspace
from checkpoints.models.thread import ByteLength
from checkpoints.models.value import PACKED_FIELDS
from checkpoints.packing import MARK, PACK_MIN, VALUE_MIN, Packed, digests, pack
from checkpoints.parts import enabled
from checkpoints.storage import save_sql

logger = logging.getLogger(__name__)


def grace() -> timedelta:
    return timedelta(seconds=settings.CAIRN_VALUE_GRACE_SECONDS)


# The parts this process's saves sent, by workspace pk and digest: when (the `used_at` they were sent with,
# once the statement committed). Bounded: the least recently used is forgotten first.
SENT_LIMIT = 16384
_sent: LRUCache[tuple[int, bytes], datetime] = LRUCache(maxsize=SENT_LIMIT)
_sent_lock = threading.Lock()  # cachetools' caches are not thread-safe


def parts_to_store(
    *, workspace_id: int, parts: Mapping[bytes, str], now: datetime, skip_sent_lately: bool = False
) -> save_sql.Parts:
    """The parts a save stores, marked as used at `now` unless a save did within half the grace period.
    With `skip_sent_lately`, those this process sent within a quarter of the grace period are only named
    (`Parts.known`)."""
    known: tuple[bytes, ...] = ()
    if skip_sent_lately and enabled("sent_parts"):
        since = now - grace() / 4
        with _sent_lock:
            known = tuple(digest for digest in parts if _sent.get((workspace_id, digest), since) > since)
    texts = {digest: text for digest, text in parts.items() if digest not in known} if known else parts
    return save_sql.Parts(
        workspace_id=workspace_id,
        texts=texts,
        used_at=now,
        stale=now - grace() / 2,
        known=known,
        # Each was sent after `since`, so no collector can take it before `now + grace/4`.
        deadline=now + grace() / 4 if known else None,
    )


def parts_sent(parts: save_sql.Parts) -> None:
    """Remember the parts a save's statement sent (call once it committed)."""
    with _sent_lock:
        for digest in parts.texts:
            _sent[parts.workspace_id, digest] = parts.used_at


def parts_not_found(parts: save_sql.Parts) -> None:
    """A save's statement wrote nothing (some part it only named may be gone): the next one sends them."""
    with _sent_lock:
        for digest in parts.known:
            _sent.pop((parts.workspace_id, digest), None)


def forget_sent_parts() -> None:
    """Drop what this process remembers of the parts it sent (tests)."""
    with _sent_lock:
        _sent.clear()


def store_parts(*, workspace_id: int, parts: Mapping[bytes, str], now: datetime) -> None:
    """Store the parts and mark them as used by a save at `now` (for writers other than a save's insert)."""
    save_sql.store_parts(parts_to_store(workspace_id=workspace_id, parts=parts, now=now))


@contextmanager
def stored_packed(checkpoint: Checkpoint, packed: Mapping[str, Packed]) -> Iterator[None]:
    """While inside, the checkpoint's packed documents hold their stored (packed) text, for the insert; the
    whole texts come back afterwards."""
    whole = {field: getattr(checkpoint, field) for field in packed}
    for field, document in packed.items():
        setattr(checkpoint, field, document.stored)
    try:
        yield
    finally:
        for field, text in whole.items():
            setattr(checkpoint, field, text)


def packed_documents(
    texts: Mapping[str, str | None], values: Mapping[str, Any] | None = None
) -> dict[str, Packed]:
    """The documents among `texts` (field name -> whole canonical text) worth storing packed, packed.
    `values` are the same documents decoded, when the caller has them (else the text is decoded)."""
    result = {}
    for field in PACKED_FIELDS:
        text = texts.get(field)
        if text is None or len(text) < PACK_MIN:
            continue
        value = values[field] if values is not None else json.loads(text)
        packed = pack(value, text)
        if packed is not None:
            result[field] = packed
    return result


def pack_stored(checkpoint: Checkpoint, *, now: datetime) -> None:
    """Store the parts of the checkpoint's large documents and leave their packed text on it, for rows
    inserted through the ORM (thread copies) once their checksum is computed from the whole text."""
    packed = packed_documents({field: getattr(checkpoint, field) for field in PACKED_FIELDS})
    store_parts(workspace_id=checkpoint.workspace_id, parts=all_parts(packed), now=now)
    for field, document in packed.items():
        setattr(checkpoint, field, document.stored)


@contextmanager
def writes_packed(
    writes: Sequence[PendingWrite], *, workspace_id: int, now: datetime
) -> Iterator[save_sql.Parts]:
    """While inside, the writes' values hold their stored text, packed from `VALUE_MIN` characters on (a
    step's writes name the parts its next checkpoint names), for the insert; it gives the parts to store
    first (`save_sql.store_parts`), in the insert's transaction, marked as used at `now`.
    The whole texts come back afterwards."""
    whole = [(write.value, write.size_bytes) for write in writes]
    parts: dict[bytes, str] = {}
    for write in writes:
        text = write.value
        if len(text) < VALUE_MIN or text[0] not in "[{":
            continue  # stored whole, without decoding it
        packed = pack(json.loads(text), text, least=VALUE_MIN)
        if packed is not None:
            write.value = packed.stored
            write.size_bytes = len(text.encode("utf-8"))
            parts.update(packed.parts)
    try:
        yield parts_to_store(workspace_id=workspace_id, parts=parts, now=now)
    finally:
        for write, (text, size) in zip(writes, whole, strict=True):
            write.value, write.size_bytes = text, size


def all_parts(packed: Mapping[str, Packed]) -> dict[bytes, str]:
    return {digest: body for document in packed.values() for digest, body in document.parts.items()}


def named_digests(workspace_id: int) -> set[bytes]:
    """Every part a checkpoint or a pending write of the workspace names."""
    return named_by(Checkpoint.objects.filter(workspace_id=workspace_id)) | named_by_writes(workspace_id)


def packed_writes() -> Exact:
    """The pending writes whose value is stored packed."""
    return _is_packed("value")


def named_by_writes(workspace_id: int) -> set[bytes]:
    """Every part the packed values of the workspace's pending writes name (their headers only)."""
    headers = (
        PendingWrite.objects.filter(thread__workspace_id=workspace_id)
        .filter(packed_writes())
        .annotate(header=_header("value"))
        .values_list("header", flat=True)
    )
    return digests(headers.iterator(chunk_size=2000))


def values_collect(
    *, workspace: Workspace, now: datetime | None = None, batch_size: int = 1000
) -> dict[str, int]:
    """Delete the workspace's parts that no checkpoint names and no save used within the grace period;
    returns how many parts and bytes were freed."""
    now = now or timezone.now()
    cutoff = now - grace()
    named = named_digests(workspace.pk)  # after `now`: a save marking a part later is seen by the delete
    freed = {"values": 0, "bytes": 0}
    last_pk = 0
    while True:
        rows = list(
            StoredValue.objects.filter(workspace=workspace, used_at__lt=cutoff, pk__gt=last_pk)
            .order_by("pk")
            .values_list("pk", "digest", "size_bytes")[:batch_size]
        )
        if not rows:
            break
        last_pk = rows[-1][0]
        doomed = [(pk, size) for pk, digest, size in rows if bytes(digest) not in named]
        if doomed:
            # used_at is checked again by the delete itself, on rows a save may have just marked.
            pks = [pk for pk, _ in doomed]
            StoredValue.objects.filter(pk__in=pks, used_at__lt=cutoff).delete()
            kept = set(StoredValue.objects.filter(pk__in=pks).values_list("pk", flat=True))
            freed["values"] += len(pks) - len(kept)
            freed["bytes"] += sum(size for pk, size in doomed if pk not in kept)
    if freed["values"]:
        logger.info("values collected workspace=%s %s", workspace.slug, freed)
    return freed


def values_collect_all(*, now: datetime | None = None) -> dict[str, int]:
    """`values_collect` for every workspace."""
    total = {"values": 0, "bytes": 0}
    for workspace in Workspace.objects.order_by("pk").iterator():
        for key, count in values_collect(workspace=workspace, now=now).items():
            total[key] += count
    return total


PARTS_PER_QUERY = 500


@dataclass(frozen=True)
class DocumentSizes:
    """Checkpoint documents measured two ways: `logical_bytes` as they are whole (the rows' `size_bytes`),
    `stored_bytes` as stored: the text their rows hold (skeletons for packed documents, whole text
    otherwise) plus the distinct parts the packed ones name, each counted once."""

    logical_bytes: int
    row_bytes: int
    parts: int
    part_bytes: int

    @property
    def stored_bytes(self) -> int:
        return self.row_bytes + self.part_bytes


def row_text_bytes() -> CombinedExpression:
    """An expression: the UTF-8 bytes of a checkpoint row's documents as stored (state, context and
    metadata; none on tombstones)."""
    return (
        Coalesce(ByteLength("state"), 0)
        + Coalesce(ByteLength("context"), 0)
        + Coalesce(ByteLength("metadata"), 0)
    )


def _is_packed(field: str) -> Exact:
    """Whether the document is stored packed, from its first character only: PostgreSQL reads a prefix of a
    large value without decompressing the rest, where LIKE '#%' would read it whole."""
    return Exact(Left(field, 1), Value(MARK))


def packed_rows() -> Q:
    """The rows with at least one packed document (tombstones have none)."""
    return Q(_is_packed("state")) | Q(_is_packed("context"))


def _header(field: str) -> Case:
    """The reference header of a packed document (None for a whole one)."""
    return Case(When(_is_packed(field), then=Left(field, StrIndex(field, Value("\n")))), default=None)


def named_by(checkpoints: QuerySet[Checkpoint]) -> set[bytes]:
    """Every part the packed documents among `checkpoints` name: one query over their packed rows, which
    reads only the headers."""
    rows = (
        checkpoints.filter(packed_rows())
        .annotate(state_header=_header("state"), context_header=_header("context"))
        .values_list("state_header", "context_header")
    )
    return digests(header for row in rows.iterator(chunk_size=2000) for header in row)


def part_sizes(workspace_id: int, named: Collection[bytes]) -> tuple[int, int]:
    """How many of the `named` parts the workspace stores, and their bytes (each counted once; one query
    per PARTS_PER_QUERY digests, none when nothing is named)."""
    wanted = list(named)
    count = size = 0
    for start in range(0, len(wanted), PARTS_PER_QUERY):
        chunk = wanted[start : start + PARTS_PER_QUERY]
        found = StoredValue.objects.filter(workspace_id=workspace_id, digest__in=chunk).aggregate(
            count=Count("pk"), bytes=Coalesce(Sum("size_bytes"), 0)
        )
        count += found["count"]
        size += found["bytes"]
    return count, size


def stored_bytes(*, workspace_id: int, checkpoints: QuerySet[Checkpoint] | None = None) -> DocumentSizes:
    """What checkpoint documents are whole and what they occupy as stored (docs/storage.md).

    Of `checkpoints` (a queryset of the workspace's rows): their rows plus the distinct parts they name
    (three queries, one more per PARTS_PER_QUERY parts). By default, of the whole workspace: every live
    row plus every part the workspace stores, named or not yet collected (two queries, no header read).
    """
    rows: QuerySet[Checkpoint]
    if checkpoints is None:
        rows = Checkpoint.objects.filter(workspace_id=workspace_id, expired_at__isnull=True)
        parts = StoredValue.objects.filter(workspace_id=workspace_id).aggregate(
            count=Count("pk"), bytes=Coalesce(Sum("size_bytes"), 0)
        )
        count, part_bytes = parts["count"], parts["bytes"]
    else:
        rows = checkpoints
        count, part_bytes = part_sizes(workspace_id, named_by(checkpoints))
    totals = rows.aggregate(logical=Coalesce(Sum("size_bytes"), 0), stored=Coalesce(Sum(row_text_bytes()), 0))
    return DocumentSizes(
        logical_bytes=totals["logical"], row_bytes=totals["stored"], parts=count, part_bytes=part_bytes
    )
