"""Writing medallion versions: the revision every version gets, and create-or-update by exact scope.

`medallion_upsert` calls the provider (slow: a model round trip) outside any transaction and lock, then
applies the result in a short transaction:
- no active medallion for the scope: INSERT. The partial unique constraint `medallion_one_active_per_scope`
  settles racing creators: one insert wins, the others get an IntegrityError and redo their work as an
  update of the winner's medallion;
- otherwise a conditional UPDATE (`WHERE version = <the version the provider merged into>`) that must change
  exactly one row; if another writer got there first, the work is redone on the newer version.
After a few lost races the upsert stops racing: it takes the workspace row lock (FOR NO KEY UPDATE, which
serialises contended upserts without blocking the foreign-key checks of other writers' inserts) and calls
the provider under it, so progress is guaranteed. Every write adds a MedallionRevision with the evidence,
model and job in the same transaction: no version exists without its history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from checkpoints import medallion_schema as schema
from checkpoints.llm import LLMOutputInvalid, MedallionProvider
from checkpoints.models import Job, Medallion, MedallionRevision, Thread, Workspace
from checkpoints.services.medallion_reads import medallion_document
from checkpoints.services.medallion_vectors import medallion_vector_write

logger = logging.getLogger(__name__)

# Lost races tolerated before the upsert serialises on the workspace lock.
OPTIMISTIC_ATTEMPTS = 3
Window = tuple[datetime | None, datetime | None]


class StaleInput(Exception):
    """Raised by a guard when the inputs of an upsert changed meanwhile (e.g. the thread was summarised
    by someone else); the caller rebuilds its evidence and tries again."""


class _LostRace(Exception):
    pass


@dataclass(frozen=True)
class Upsert:
    medallion: Medallion
    created: bool


def scope_fields(scope: schema.MedallionScope) -> dict[str, Any]:
    """Model fields holding a medallion's scope: the normalised lists and their hash `scope_key` (at most
    one active medallion per key)."""
    return {"graph_nodes": scope.graph_nodes, "tags": scope.tags, "scope_key": scope.scope_key}


def content_fields(content: schema.MedallionContent) -> dict[str, Any]:
    """Model fields holding a medallion's written content."""
    data = content.to_dict()
    return {
        "high_level": data["summary"]["high_level"],
        "subsystems": data["summary"]["subsystems"],
        "decisions": data["decisions"],
        "open_questions": data["open_questions"],
        "affordances": data["affordances"],
    }


def revision_record(
    medallion: Medallion,
    *,
    actor_label: str,
    evidence: schema.Evidence | None = None,
    job: Job | None = None,
) -> MedallionRevision:
    """Store the medallion's current version as a revision (call inside the write's transaction), and
    embed that version for search by meaning: every write of a version comes through here."""
    fresh = Medallion.objects.for_api().get(pk=medallion.pk)
    medallion_vector_write(fresh)
    return MedallionRevision.objects.create(
        medallion=fresh,
        version=fresh.version,
        status=fresh.status,
        content=medallion_document(fresh).to_dict(),
        evidence=evidence.to_dict() if evidence is not None else None,
        model=fresh.model,
        job=job,
        actor_label=actor_label[:255],
        created_at=fresh.updated_at,
    )


def _widen(window: Window, low: datetime | None, high: datetime | None) -> Window:
    lows = [t for t in (window[0], low) if t is not None]
    highs = [t for t in (window[1], high) if t is not None]
    return (min(lows) if lows else None, max(highs) if highs else None)


@dataclass
class _Request:
    workspace: Workspace
    scope: schema.MedallionScope
    evidence: schema.Evidence
    provider: MedallionProvider
    actor_label: str
    job: Job | None
    source_thread: Thread | None
    window: Window
    guard: Callable[[], None] | None

    def active(self, *, lock: bool = False) -> Medallion | None:
        queryset = Medallion.objects.select_for_update(of=("self",)) if lock else Medallion.objects.all()
        return (
            queryset.for_workspace(self.workspace)
            .active()
            .filter(scope_key=self.scope.scope_key)
            .for_api()
            .first()
        )

    def content_for(self, current: Medallion | None) -> schema.MedallionContent:
        if current is None:
            content = self.provider.generate(self.scope, self.evidence)
        else:
            content = self.provider.update(medallion_document(current), self.evidence)
        # Whatever the provider, only valid content is stored: every later read parses it again.
        try:
            return schema.MedallionContent.from_dict(content.to_dict(), require_all=True)
        except schema.SchemaError as exc:
            raise LLMOutputInvalid(f"{self.provider.model} wrote an invalid medallion: {exc}") from exc

    def insert(self, content: schema.MedallionContent) -> Medallion:
        now = timezone.now()
        medallion = Medallion.objects.create(
            workspace=self.workspace,
            **scope_fields(self.scope),
            model=self.provider.model[:255],
            knowledge_min_ts=self.window[0],
            knowledge_max_ts=self.window[1],
            source_thread=self.source_thread,
            created_at=now,
            updated_at=now,
            **content_fields(content),
        )
        revision_record(medallion, actor_label=self.actor_label, evidence=self.evidence, job=self.job)
        return medallion

    def bump(self, current: Medallion, content: schema.MedallionContent) -> Medallion:
        """Write the next version over `current`, only if nobody else wrote a version since it was read."""
        # Another process's clock may be behind the creator's: never write updated_at < created_at.
        now = max(timezone.now(), current.created_at)
        low, high = _widen((current.knowledge_min_ts, current.knowledge_max_ts), *self.window)
        changes: dict[str, Any] = {
            **content_fields(content),
            "model": self.provider.model[:255],
            "version": current.version + 1,
            "updated_at": now,
            "knowledge_min_ts": low,
            "knowledge_max_ts": high,
        }
        if self.source_thread is not None:
            changes["source_thread"] = self.source_thread
        written = Medallion.objects.filter(
            pk=current.pk, version=current.version, status=Medallion.Status.ACTIVE
        ).update(**changes)
        if written != 1:
            raise _LostRace
        revision_record(current, actor_label=self.actor_label, evidence=self.evidence, job=self.job)
        return Medallion.objects.for_api().get(pk=current.pk)

    def apply(self, current: Medallion | None, content: schema.MedallionContent) -> Upsert | None:
        """One short transaction; None if another writer got there first."""
        try:
            with transaction.atomic():
                if self.guard is not None:
                    self.guard()
                if current is None:
                    return Upsert(self.insert(content), created=True)
                return Upsert(self.bump(current, content), created=False)
        except _LostRace:
            return None
        except IntegrityError:
            if current is None and self.active() is not None:
                return None  # a concurrent creator won the scope: merge into theirs
            raise

    def apply_serialised(self) -> Upsert:
        """Under the workspace lock: nobody else taking this path can interleave, so one pass suffices
        (a racing optimistic creator can still win an insert once; then we update theirs)."""
        for _ in range(OPTIMISTIC_ATTEMPTS):
            try:
                with transaction.atomic():
                    if self.guard is not None:
                        self.guard()
                    # NO KEY: a plain FOR UPDATE would also block the foreign-key checks of a racing
                    # optimistic writer's inserts, which then waits for us while we wait for its insert.
                    workspace = Workspace.objects.select_for_update(no_key=True).filter(pk=self.workspace.pk)
                    list(workspace.values_list("pk"))
                    current = self.active(lock=True)
                    content = self.content_for(current)
                    if current is None:
                        return Upsert(self.insert(content), created=True)
                    return Upsert(self.bump(current, content), created=False)
            except IntegrityError:
                if self.active() is None:
                    raise
        raise RuntimeError("medallion upsert could not settle the scope")  # pragma: no cover


def medallion_upsert(
    *,
    workspace: Workspace,
    scope: schema.MedallionScope,
    evidence: schema.Evidence,
    provider: MedallionProvider,
    actor_label: str,
    job: Job | None = None,
    source_thread: Thread | None = None,
    window: Window = (None, None),
    guard: Callable[[], None] | None = None,
) -> Upsert:
    """Create or update the active medallion of exactly `scope` from `evidence` (see the module docstring).

    `guard`, if given, runs first inside the write transaction; it may take locks and raise StaleInput.
    Provider errors (LLMError) propagate before anything is written.
    """
    request = _Request(workspace, scope, evidence, provider, actor_label, job, source_thread, window, guard)
    for attempt in range(OPTIMISTIC_ATTEMPTS):
        current = request.active()
        content = request.content_for(current)  # the slow part: no transaction, no lock
        outcome = request.apply(current, content)
        if outcome is not None:
            return outcome
        logger.info("medallion upsert for scope %s lost race %s; retrying", scope.scope_key[:12], attempt + 1)
    return request.apply_serialised()
