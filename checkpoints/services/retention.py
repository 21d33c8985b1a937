"""Retention: the sweep (TTL expiry and keep-latest-N become tombstones), tombstone purge, idle-thread
expiry, the dry-run preview, the workspace policy and "sweep now" as a tracked job. Which threads are idle,
and by which rule, is `idle_expiry`'s (docs/retention.md).

Concurrency: every write under a thread locks the thread row first (`thread_lock_or_create`), so the sweeps
lock threads too, with `SELECT ... FOR UPDATE SKIP LOCKED` on PostgreSQL: two sweeps (or a sweep and a writer)
never wait for each other or touch the same thread at once, and each re-checks its rows under the lock, so
nothing is counted twice. SQLite serialises writers with its database lock (IMMEDIATE transactions).
Work is done in batches, each in its own short transaction, so a long sweep never blocks writers for long.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from checkpoints.exceptions import ValidationFailed
from checkpoints.integrity import format_timestamp
from checkpoints.models import Checkpoint, Job, StoreItem, Thread, Workspace
from checkpoints.models.store import NAMESPACE_SEPARATOR
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.checkpoints import checkpoints_tombstone
from checkpoints.services.idle_expiry import SOURCE_THREAD, idle_threads
from checkpoints.services.jobs import job_actor, workspace_job_submit
from checkpoints.services.thread_rows import thread_audit
from checkpoints.services.threads import thread_erase

logger = logging.getLogger(__name__)

SAMPLE_SIZE = 20
# A sweep's audit event names at most this many checkpoints per rule (its counts stay exact).
SWEEP_AUDIT_IDS = 100
POLICY_FIELDS = (
    "default_ttl_seconds",
    "keep_latest",
    "thread_idle_ttl_seconds",
    "tombstone_retention_seconds",
    "auto_summarize_every",
)
_SYSTEM = Actor.system("retention")

RULES = ("expired", "pruned")


@dataclass
class _Tally:
    """Per workspace (pk): how many checkpoints each rule tombstoned, and the first SWEEP_AUDIT_IDS."""

    counts: defaultdict[int, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: dict.fromkeys(RULES, 0))
    )
    touched: defaultdict[int, dict[str, list[int]]] = field(
        default_factory=lambda: defaultdict(lambda: {rule: [] for rule in RULES})
    )

    def add(self, workspace_pk: int, rule: str, checkpoint_pk: int) -> None:
        self.counts[workspace_pk][rule] += 1
        touched = self.touched[workspace_pk][rule]
        if len(touched) < SWEEP_AUDIT_IDS:
            touched.append(checkpoint_pk)


def workspace_audit(workspace: Workspace, *, actor: Actor, action: str, details: dict[str, Any]) -> None:
    """Record an audit event whose target is the workspace (its retention policy, a sweep, a purge)."""
    audit_record(
        workspace=workspace,
        actor=actor,
        action=action,
        target_type="workspace",
        target_id=workspace.slug,
        details=details,
    )


# --- what each rule selects (shared by the sweep and the preview, so the preview is exact) ------------------


def expired_checkpoints(*, now: datetime, workspace: Workspace | None = None) -> QuerySet[Checkpoint]:
    """Rule 1 (TTL): checkpoints whose expiry has passed and that still carry a payload."""
    queryset = Checkpoint.objects.due_for_tombstone(now)
    return queryset.filter(workspace=workspace) if workspace is not None else queryset


def excess_checkpoints(
    *, workspace: Workspace, now: datetime, thread_pks: Iterable[int] | None = None
) -> QuerySet[Checkpoint]:
    """Rule 2 (keep-latest-N): live checkpoints older than the newest N of their thread+namespace.

    Pinned checkpoints count among the newest N (the ranking covers every live row) but are never selected.
    """
    if workspace.keep_latest is None:
        return Checkpoint.objects.none()
    live = _in_threads(Checkpoint.objects.filter(workspace=workspace).live(now), thread_pks)
    ranked = live.annotate(
        rank=Window(RowNumber(), partition_by=[F("thread_id"), F("namespace")], order_by=F("id").desc())
    )
    # The pinned test stays outside the ranked subquery: inside, it would drop pinned rows from the ranking.
    return Checkpoint.objects.filter(
        pk__in=ranked.filter(rank__gt=workspace.keep_latest).values("pk")
    ).filter(pinned=False)


def purgeable_tombstones(
    *, workspace: Workspace, now: datetime, after_sweep: bool = False
) -> QuerySet[Checkpoint]:
    """Tombstones kept for the workspace's tombstone retention (or longer); none if it keeps them forever.

    `after_sweep` adds the expired checkpoints the next sweep turns into such tombstones (a tombstone's
    expired_at is when it really expired, so a long-expired checkpoint is purgeable as soon as it is swept).
    """
    if workspace.tombstone_retention_seconds is None:
        return Checkpoint.objects.none()
    cutoff = now - timedelta(seconds=workspace.tombstone_retention_seconds)
    kept_long = Q(expired_at__lte=cutoff)
    if after_sweep:
        kept_long |= Q(expired_at__isnull=True, pinned=False, expires_at__lte=cutoff)
    return Checkpoint.objects.filter(workspace=workspace).filter(kept_long)


# --- the sweep ----------------------------------------------------------------------------------------------


def _lock_threads(thread_pks: Iterable[int]) -> set[int]:
    """Lock these thread rows for the transaction, skipping any another transaction holds (PostgreSQL);
    returns the ones locked. On SQLite the IMMEDIATE transaction already excludes every other writer."""
    locked = Thread.objects.select_for_update(skip_locked=True).filter(pk__in=sorted(set(thread_pks)))
    return set(locked.values_list("pk", flat=True))


def _in_threads(queryset: QuerySet[Checkpoint], thread_pks: Iterable[int] | None) -> QuerySet[Checkpoint]:
    return queryset if thread_pks is None else queryset.filter(thread_id__in=list(thread_pks))


def _tombstone_in_batches(select: Any, *, now: datetime, batch_size: int, rule: str, tally: _Tally) -> None:
    """Tombstone what `select(thread_pks)` returns, batch by batch, each batch in its own transaction.

    `select(None)` proposes candidates; after their threads are locked, `select(locked)` re-checks them,
    because a writer may have pinned, extended or expired a row between the two reads. Threads locked by
    someone else are skipped for the rest of this run: their holder (typically a concurrent sweep) handles
    those rows, or the next sweep does.
    """
    skipped: set[int] = set()
    # Keyset: each batch starts after the last candidate of the previous one. Without it every batch walked
    # the primary key from the start past everything already tombstoned, skipped or re-checked out: a sweep
    # of N rows read O(N^2 / batch_size) index entries (a 1M-row backlog took 16 minutes instead of ~2).
    after = 0
    while True:
        with transaction.atomic():
            proposed = select(None).filter(pk__gt=after)
            if skipped:
                proposed = proposed.exclude(thread_id__in=skipped)
            candidates = list(proposed.order_by("pk").values_list("pk", "thread_id")[:batch_size])
            if not candidates:
                return
            after = candidates[-1][0]
            locked = _lock_threads(thread for _, thread in candidates)
            skipped |= {thread for _, thread in candidates} - locked
            candidate_pks = [pk for pk, thread in candidates if thread in locked]
            rows = list(select(locked).filter(pk__in=candidate_pks).values_list("pk", "workspace_id"))
            checkpoints_tombstone(pks=[pk for pk, _ in rows], now=now)
            for pk, workspace_pk in rows:
                tally.add(workspace_pk, rule, pk)
        if len(candidates) < batch_size:
            return


def retention_sweep(
    *,
    now: datetime | None = None,
    workspace: Workspace | None = None,
    batch_size: int | None = None,
    actor: Actor | None = None,
) -> dict[str, int]:
    """Apply the retention rules that turn checkpoints into tombstones, in every workspace (or one).

    1. TTL: checkpoints whose `expires_at` has passed (`expires_at <= now`, never pinned ones).
    2. keep-latest-N (workspaces with `keep_latest`): live checkpoints beyond the newest N of each
       thread+namespace; pinned ones are never touched.
    A tombstone keeps ids, parent, checksum, created_at and expired_at; state, context, metadata and the
    pending writes are deleted. Idempotent (a second sweep finds nothing) and safe to run concurrently.
    Writes one `retention.sweep` audit event per workspace touched, with its counts; if the sweep is
    interrupted (time limit, lost database) the batches already committed are still audited.
    Returns `{"expired", "pruned", "workspaces"}`.
    """
    now = now or timezone.now()
    batch_size = batch_size or settings.CAIRN_SWEEP_BATCH_SIZE
    tally = _Tally()
    complete = False
    try:
        _tombstone_in_batches(
            lambda threads: _in_threads(expired_checkpoints(now=now, workspace=workspace), threads),
            now=now,
            batch_size=batch_size,
            rule="expired",
            tally=tally,
        )
        policies = Workspace.objects.filter(keep_latest__isnull=False).order_by("pk")
        if workspace is not None:
            policies = policies.filter(pk=workspace.pk)
        for policy in policies:
            _tombstone_in_batches(
                lambda threads, policy=policy: excess_checkpoints(
                    workspace=policy, now=now, thread_pks=threads
                ),
                now=now,
                batch_size=batch_size,
                rule="pruned",
                tally=tally,
            )
        complete = True
    finally:
        _audit_sweep(tally, actor=actor or _SYSTEM, now=now, complete=complete)
    return {
        "expired": sum(counts["expired"] for counts in tally.counts.values()),
        "pruned": sum(counts["pruned"] for counts in tally.counts.values()),
        "workspaces": len(tally.counts),
    }


def _audit_sweep(tally: _Tally, *, actor: Actor, now: datetime, complete: bool) -> None:
    """One `retention.sweep` event per workspace touched: the counts, and which checkpoints (the first
    SWEEP_AUDIT_IDS per rule; tombstones keep their ids, so they are read back once, after the sweep)."""
    if not tally.counts:
        return
    with transaction.atomic():
        pks = [pk for rules in tally.touched.values() for ids in rules.values() for pk in ids]
        refs = {
            pk: {"thread_id": thread_id, "namespace": namespace, "checkpoint_id": checkpoint_id}
            for pk, thread_id, namespace, checkpoint_id in Checkpoint.objects.filter(pk__in=pks).values_list(
                "pk", "thread__thread_id", "namespace", "checkpoint_id"
            )
        }
        for workspace in Workspace.objects.filter(pk__in=list(tally.counts)).order_by("pk"):
            touched = tally.touched[workspace.pk]
            workspace_audit(
                workspace,
                actor=actor,
                action="retention.sweep",
                details={
                    **tally.counts[workspace.pk],
                    "as_of": format_timestamp(now),
                    "complete": complete,
                    "checkpoints": {
                        rule: [refs[pk] for pk in sorted(touched[rule]) if pk in refs] for rule in RULES
                    },
                },
            )


# --- tombstone purge and idle threads -----------------------------------------------------------------------


def tombstones_purge(*, now: datetime | None = None, batch_size: int | None = None) -> int:
    """Hard-delete tombstones kept longer than their workspace's `tombstone_retention_seconds`.

    Batched; one `retention.purge` audit event per workspace with its count. Tombstones are never written
    again, so no thread lock is needed, and two purges racing delete each row once.
    """
    now = now or timezone.now()
    batch_size = batch_size or settings.CAIRN_SWEEP_BATCH_SIZE
    total = 0
    for workspace in Workspace.objects.order_by("pk").iterator():
        purged = 0
        try:
            while True:
                pks = list(
                    purgeable_tombstones(workspace=workspace, now=now).values_list("pk", flat=True)[
                        :batch_size
                    ]
                )
                if not pks:
                    break
                # Counted by model: the delete cascades to the tombstones' annotations.
                _, deleted = Checkpoint.objects.filter(pk__in=pks, expired_at__isnull=False).delete()
                purged += deleted.get(Checkpoint._meta.label, 0)
                if len(pks) < batch_size:
                    break
        finally:
            if purged:
                workspace_audit(
                    workspace,
                    actor=_SYSTEM,
                    action="retention.purge",
                    details={"purged": purged, "as_of": format_timestamp(now)},
                )
        total += purged
    return total


def threads_expire_idle(*, now: datetime | None = None) -> int:
    """Delete whole threads whose idle expiry has passed (`idle_expiry.idle_threads`), with everything
    under them.

    Each thread is locked first, then re-checked by a second statement, and deleted in its own transaction
    with a `thread.expire` audit event. The re-check reads after the lock is held, so it sees every write
    committed before: a write or a pin (each locks the thread row first) either commits before it and keeps
    the thread, or waits for the delete and finds no thread. Threads locked by someone else are skipped
    (PostgreSQL; SQLite's write lock serialises). Returns how many threads were deleted.
    """
    now = now or timezone.now()
    idle = idle_threads(now=now)
    deleted = 0
    for thread_pk in list(idle.order_by("pk").values_list("pk", flat=True)):
        with transaction.atomic():
            if not _lock_threads([thread_pk]):
                continue  # deleted meanwhile, or locked by a writer or another expiry
            thread = idle.select_related("workspace").filter(pk=thread_pk).first()
            if thread is None:
                continue  # touched or pinned meanwhile: not idle any more
            details: dict[str, Any] = {
                "thread_id": thread.thread_id,
                "updated_at": format_timestamp(thread.updated_at),
                "expires_at": format_timestamp(thread.expires_at) if thread.expires_at else None,
                "idle_ttl_seconds": (
                    thread.ttl_seconds
                    if thread.expiry_source == SOURCE_THREAD  # type: ignore[attr-defined]
                    else thread.workspace.thread_idle_ttl_seconds
                ),
                "expiry_source": thread.expiry_source,  # type: ignore[attr-defined]
            }
            details.update(thread_erase(thread))
            thread_audit(
                thread,
                actor=_SYSTEM,
                action="thread.expire",
                details=details,
            )
            deleted += 1
    return deleted


# --- preview, policy, sweep-now -----------------------------------------------------------------------------


def _checkpoint_sample(queryset: QuerySet[Checkpoint]) -> dict[str, Any]:
    rows = queryset.order_by("pk").values_list("thread__thread_id", "namespace", "checkpoint_id")[
        :SAMPLE_SIZE
    ]
    return {
        "count": queryset.count(),
        "sample": [{"thread_id": t, "namespace": n, "checkpoint_id": c} for t, n, c in rows],
    }


def _store_item_sample(queryset: QuerySet[StoreItem]) -> dict[str, Any]:
    rows = queryset.order_by("pk").values_list("namespace", "key")[:SAMPLE_SIZE]
    return {
        "count": queryset.count(),
        "sample": [{"namespace": ns.split(NAMESPACE_SEPARATOR), "key": key} for ns, key in rows],
    }


def retention_preview(*, workspace: Workspace, now: datetime | None = None) -> dict[str, Any]:
    """What retention would do in this workspace now, changing nothing: counts and up to SAMPLE_SIZE ids
    per rule, each from the same query as the job it previews. `expired` and `pruned`: the next sweep;
    `purged`: the next tombstone purge, after that sweep (it includes expired checkpoints old enough to be
    purged as soon as they are tombstones); `idle_threads`: the next idle-thread expiry; `store_items`: the
    store items past their TTL that the next store sweep deletes (`StoreItem.objects.expired`, its query)."""
    now = now or timezone.now()
    idle = idle_threads(now=now, workspace=workspace)
    return {
        "as_of": format_timestamp(now),
        "policy": retention_policy(workspace),
        "expired": _checkpoint_sample(expired_checkpoints(now=now, workspace=workspace)),
        "pruned": _checkpoint_sample(excess_checkpoints(workspace=workspace, now=now)),
        "purged": _checkpoint_sample(purgeable_tombstones(workspace=workspace, now=now, after_sweep=True)),
        "idle_threads": {
            "count": idle.count(),
            "sample": [
                {"thread_id": t}
                for t in idle.order_by("pk").values_list("thread_id", flat=True)[:SAMPLE_SIZE]
            ],
        },
        "store_items": _store_item_sample(StoreItem.objects.filter(workspace=workspace).expired(now)),
    }


def retention_policy(workspace: Workspace) -> dict[str, int | None]:
    """The workspace's retention policy as a plain dict."""
    return {name: getattr(workspace, name) for name in POLICY_FIELDS}


@transaction.atomic
def retention_policy_update(*, workspace: Workspace, actor: Actor, **changes: int | None) -> Workspace:
    """Change some of the policy fields (values > 0, or None for "no such rule" where allowed); audited
    as `retention.policy` with the old and new values. The next sweep applies the new policy."""
    unknown = sorted(set(changes) - set(POLICY_FIELDS))
    if unknown:
        raise ValidationFailed(f"Not retention policy fields: {', '.join(unknown)}.", {"fields": unknown})
    locked = Workspace.objects.select_for_update(no_key=True).get(pk=workspace.pk)  # blocks no insert
    before = retention_policy(locked)
    for name, value in changes.items():
        setattr(locked, name, value)
    locked.save(update_fields=list(changes))
    after = retention_policy(locked)
    if before != after:
        workspace_audit(
            locked,
            actor=actor,
            action="retention.policy",
            details={"before": before, "after": after},
        )
    for name in POLICY_FIELDS:
        setattr(workspace, name, getattr(locked, name))
    return locked


@transaction.atomic
def retention_sweep_submit(*, workspace: Workspace, actor: Actor) -> Job:
    """ "Sweep now" for one workspace, as a tracked job (queued now, run by a worker after commit)."""
    return workspace_job_submit(workspace, actor, Job.Kind.SWEEP, "checkpoints.tasks.run_sweep_job")


def retention_sweep_for_job(job: Job) -> dict[str, Any]:
    """The handler of a sweep job: sweep the job's workspace in the name of whoever asked."""
    return retention_sweep(workspace=job.workspace, actor=job_actor(job))
