"""Packing the checkpoints that were stored whole before packing existed (docs/storage.md).

A save packs a large state or context as it stores it (`checkpoint_records.Payloads.packed`); rows saved
earlier still hold the whole text. `checkpoints_pack` converts them in keyset batches by primary key, so its
memory stays flat and it can stop anywhere: a later run skips the rows already packed (their text starts
with `#`) and finishes the rest. It never changes what a checkpoint restores to: `pack` only returns a
packing that assembles to the very text it was given, and each row is updated only if its column still
holds that text (a row tombstoned meanwhile is left alone). Like a save, it stores and marks the parts
(`store_parts`) before the row names them, so the value collector cannot take them away.

A dry run reads the same rows, packs them the same way and reports the same numbers, writing nothing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Length
from django.utils import timezone

from checkpoints.integrity import format_timestamp
from checkpoints.models import Checkpoint, Job, StoredValue, Workspace
from checkpoints.models.value import PACKED_FIELDS
from checkpoints.packing import MARK, PACK_MIN, Packed, pack
from checkpoints.services.audit import Actor
from checkpoints.services.jobs import job_actor, workspace_job_submit
from checkpoints.services.retention import workspace_audit
from checkpoints.storage.stored_values import store_parts

T = TypeVar("T")

DEFAULT_BATCH_SIZE = 500
# Digests per query or per store_parts call: far below SQLite's limit on bound parameters.
DIGESTS_PER_QUERY = 1000
_SYSTEM = Actor.system("storage")


@dataclass
class PackReport:
    """What a run examined (live rows with a whole column of at least PACK_MIN characters) and converted
    (or, in a dry run, would convert: rows with a column that packs). `bytes_before` is the stored
    text of the converted columns; `bytes_after` their packed text plus the parts that were not stored yet
    (each counted once). `last_pk` is where the run stopped: passing it as `after_pk` continues from there."""

    dry_run: bool = False
    batches: int = 0
    examined: int = 0
    converted: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    last_pk: int = 0
    complete: bool = False

    @property
    def bytes_saved(self) -> int:
        return self.bytes_before - self.bytes_after

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bytes_saved": self.bytes_saved}


@dataclass(frozen=True)
class _RowPlan:
    """One row's conversion: per column, the whole text it holds now and its packing."""

    pk: int
    workspace_id: int
    columns: dict[str, tuple[str, Packed]]

    @property
    def parts(self) -> dict[bytes, str]:
        return {digest: body for _, packed in self.columns.values() for digest, body in packed.parts.items()}

    @property
    def bytes_before(self) -> int:
        return sum(_utf8_len(whole) for whole, _ in self.columns.values())

    @property
    def skeleton_bytes(self) -> int:
        return sum(_utf8_len(packed.stored) for _, packed in self.columns.values())


@dataclass
class _Tally:
    """Per workspace (pk): what was converted, for its audit event."""

    counts: defaultdict[int, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: {"converted": 0, "bytes_before": 0, "bytes_after": 0})
    )

    def add(self, workspace_id: int, *, converted: int, bytes_before: int, bytes_after: int) -> None:
        counts = self.counts[workspace_id]
        counts["converted"] += converted
        counts["bytes_before"] += bytes_before
        counts["bytes_after"] += bytes_after


def checkpoints_pack(
    *,
    workspace: Workspace | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    dry_run: bool = False,
    after_pk: int = 0,
    max_batches: int | None = None,
    on_batch: Callable[[PackReport], None] | None = None,
    actor: Actor | None = None,
) -> dict[str, Any]:
    """Pack the live checkpoints (of `workspace`, default all) whose state or context is stored whole and at
    least PACK_MIN characters long; returns the report (`PackReport.as_dict`).

    Batches of `batch_size` rows after `after_pk`, each converted in its own transaction; `on_batch` sees
    the running report after each one; `max_batches` stops after that many batches (`complete` is then
    false: run again, or pass `last_pk` as `after_pk`, to finish). A real run writes one `storage.pack`
    audit event per workspace it converted rows of, with its counts, also when it is interrupted (the
    batches committed so far).
    """
    report = PackReport(dry_run=dry_run, last_pk=after_pk)
    tally = _Tally()
    counted: dict[int, set[bytes]] = defaultdict(set)
    now = timezone.now()
    try:
        for rows in _batches(_candidates(workspace), batch_size=batch_size, after_pk=after_pk):
            plans = [plan for plan in map(_plan, rows) if plan is not None]
            if dry_run:
                _count(plans, report=report, tally=tally, counted=counted)
            else:
                _convert(plans, report=report, tally=tally)
            report.batches += 1
            report.examined += len(rows)
            report.last_pk = rows[-1][0]
            if on_batch is not None:
                on_batch(report)
            if max_batches is not None and report.batches >= max_batches:
                break
        else:
            report.complete = True
    finally:
        if not dry_run:
            _audit(tally, actor=actor or _SYSTEM, now=now, complete=report.complete)
    return report.as_dict()


@transaction.atomic
def checkpoints_pack_submit(*, workspace: Workspace, actor: Actor) -> Job:
    """The conversion of one workspace as a tracked job, run by a worker (`manage.py pack_checkpoints
    --background`). A job stopped by its time limit leaves the batches it committed; running it again
    finishes the rest."""
    return workspace_job_submit(workspace, actor, Job.Kind.PACK, "checkpoints.tasks.pack_checkpoints_job")


def checkpoints_pack_for_job(job: Job) -> dict[str, Any]:
    """The handler of a pack job: convert the job's workspace in the name of whoever asked."""
    return checkpoints_pack(workspace=job.workspace, actor=job_actor(job))


def _candidates(workspace: Workspace | None) -> QuerySet[Checkpoint]:
    """Live rows (not tombstones) with a column stored whole that is long enough to be worth packing."""
    lengths = {f"{name}_length": Length(name) for name in PACKED_FIELDS}
    whole_and_long = Q()
    for name in PACKED_FIELDS:
        whole_and_long |= Q(**{f"{name}_length__gte": PACK_MIN}) & ~Q(**{f"{name}__startswith": MARK})
    queryset = Checkpoint.objects.filter(expired_at__isnull=True).annotate(**lengths).filter(whole_and_long)
    return queryset.filter(workspace=workspace) if workspace is not None else queryset


def _batches(
    queryset: QuerySet[Checkpoint], *, batch_size: int, after_pk: int
) -> Iterator[list[tuple[int, int, str | None, str | None]]]:
    """The rows' primary key, workspace and stored text (values_list: not unpacked), in keyset batches."""
    last_pk = after_pk
    while True:
        rows = list(
            queryset.filter(pk__gt=last_pk)
            .order_by("pk")
            .values_list("pk", "workspace_id", *PACKED_FIELDS)[:batch_size]
        )
        if not rows:
            return
        yield rows
        last_pk = rows[-1][0]


def _plan(row: tuple[int, int, str | None, str | None]) -> _RowPlan | None:
    """How a row's columns would be packed, or None when no column packs."""
    pk, workspace_id, *texts = row
    columns = {}
    for name, text in zip(PACKED_FIELDS, texts, strict=True):
        if text is None or text.startswith(MARK) or len(text) < PACK_MIN:
            continue
        packed = _pack_text(text)
        if packed is not None:
            columns[name] = (text, packed)
    return _RowPlan(pk, workspace_id, columns) if columns else None


def _pack_text(text: str) -> Packed | None:
    """The packing of a whole stored text; None when it stays whole (including text that is not JSON:
    verify_integrity reports such rows, packing leaves them as they are)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return pack(value, text)


def _count(
    plans: Sequence[_RowPlan], *, report: PackReport, tally: _Tally, counted: dict[int, set[bytes]]
) -> None:
    """A dry run's batch: the numbers a real run would report, from reads only. `counted` holds the parts
    this run already counted as new (a real run has stored them by then)."""
    for workspace_id, plans_here in _by_workspace(plans).items():
        parts = _union(plan.parts for plan in plans_here)
        new = _not_stored(workspace_id, parts, also_known=counted[workspace_id])
        counted[workspace_id] |= new
        _add(report, tally, workspace_id, plans_here, new_part_bytes=_bytes_of(parts, new))


def _convert(plans: Sequence[_RowPlan], *, report: PackReport, tally: _Tally) -> None:
    """A real run's batch, in one transaction: store and mark the parts, then point each row at them if
    its column still holds the text that was packed."""
    if not plans:
        return
    with transaction.atomic():
        for workspace_id, plans_here in _by_workspace(plans).items():
            parts = _union(plan.parts for plan in plans_here)
            new = _not_stored(workspace_id, parts)
            for chunk in _chunks(list(parts), DIGESTS_PER_QUERY):
                store_parts(
                    workspace_id=workspace_id,
                    parts={digest: parts[digest] for digest in chunk},
                    now=timezone.now(),
                )
            converted = [plan for plan in plans_here if _point_at_parts(plan)]
            named = _union(plan.parts for plan in converted)
            _add(report, tally, workspace_id, converted, new_part_bytes=_bytes_of(named, new))


def _point_at_parts(plan: _RowPlan) -> bool:
    """Replace the row's whole texts by their packed texts, only if it still holds them."""
    unchanged = {name: whole for name, (whole, _) in plan.columns.items()}
    packed = {name: document.stored for name, (_, document) in plan.columns.items()}
    return Checkpoint.objects.filter(pk=plan.pk, expired_at__isnull=True, **unchanged).update(**packed) == 1


def _add(
    report: PackReport,
    tally: _Tally,
    workspace_id: int,
    plans: Sequence[_RowPlan],
    *,
    new_part_bytes: int,
) -> None:
    before = sum(plan.bytes_before for plan in plans)
    after = sum(plan.skeleton_bytes for plan in plans) + new_part_bytes
    report.converted += len(plans)
    report.bytes_before += before
    report.bytes_after += after
    if plans:
        tally.add(workspace_id, converted=len(plans), bytes_before=before, bytes_after=after)


def _not_stored(
    workspace_id: int, parts: dict[bytes, str], also_known: AbstractSet[bytes] = frozenset()
) -> set[bytes]:
    """The digests among `parts` that the workspace does not store yet (nor are in `also_known`)."""
    wanted = [digest for digest in parts if digest not in also_known]
    stored: set[bytes] = set()
    for chunk in _chunks(wanted, DIGESTS_PER_QUERY):
        rows = StoredValue.objects.filter(workspace_id=workspace_id, digest__in=chunk)
        stored |= {bytes(digest) for digest in rows.values_list("digest", flat=True)}
    return set(wanted) - stored


def _by_workspace(plans: Iterable[_RowPlan]) -> dict[int, list[_RowPlan]]:
    grouped: dict[int, list[_RowPlan]] = defaultdict(list)
    for plan in plans:
        grouped[plan.workspace_id].append(plan)
    return grouped


def _union(parts: Iterable[dict[bytes, str]]) -> dict[bytes, str]:
    return {digest: body for each in parts for digest, body in each.items()}


def _bytes_of(parts: dict[bytes, str], digests: set[bytes]) -> int:
    return sum(_utf8_len(body) for digest, body in parts.items() if digest in digests)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _audit(tally: _Tally, *, actor: Actor, now: datetime, complete: bool) -> None:
    """One `storage.pack` event per workspace whose rows were converted, with its counts."""
    if not tally.counts:
        return
    with transaction.atomic():
        for workspace in Workspace.objects.filter(pk__in=list(tally.counts)).order_by("pk"):
            workspace_audit(
                workspace,
                actor=actor,
                action="storage.pack",
                details={**tally.counts[workspace.pk], "as_of": format_timestamp(now), "complete": complete},
            )
