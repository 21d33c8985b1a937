"""Medallion writes: agent-written medallions, edits, deletion, and `checkpoint_session` as a job.

Every version of a medallion is a MedallionRevision (see `medallion_store`); edits and deletions are audited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.utils import timezone

from checkpoints import medallion_schema as schema
from checkpoints.exceptions import Conflict, NotFound, PreconditionFailed, ValidationFailed
from checkpoints.llm import get_provider
from checkpoints.models import Job, Medallion, MedallionRevision, Thread, Workspace
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.jobs import job_actor, job_submit
from checkpoints.services.medallion_reads import medallion_content
from checkpoints.services.medallion_store import (
    content_fields,
    medallion_upsert,
    revision_record,
    scope_fields,
)

T = TypeVar("T")

__all__ = [
    "medallion_checkpoint",
    "medallion_checkpoint_submit",
    "medallion_create",
    "medallion_delete",
    "medallion_update",
]


def medallion_audit(medallion: Medallion, *, actor: Actor, action: str, details: dict[str, Any]) -> None:
    """Record an audit event whose target is the medallion (in its workspace)."""
    audit_record(
        workspace=medallion.workspace,
        actor=actor,
        action=action,
        target_type="medallion",
        target_id=str(medallion.medallion_id),
        details=details,
    )


def parse_input(parse: Callable[[Any], T], data: Any) -> T:
    """Validate input with a medallion_schema parser; a SchemaError becomes a 400 naming the JSON path."""
    try:
        return parse(data)
    except schema.SchemaError as exc:
        raise ValidationFailed(str(exc), {"path": exc.path}) from exc


def _scope(raw: schema.MedallionScope | dict[str, Any]) -> schema.MedallionScope:
    scope = (
        raw if isinstance(raw, schema.MedallionScope) else parse_input(schema.MedallionScope.from_dict, raw)
    )
    if scope.is_empty:
        raise ValidationFailed(
            "A medallion needs a scope: give graph_nodes and/or tags.", {"path": "$.scope"}
        )
    return scope


def _active_conflict(workspace: Workspace, scope_key: str) -> Conflict:
    existing = Medallion.objects.for_workspace(workspace).active().filter(scope_key=scope_key).first()
    return Conflict(
        "An active medallion already has exactly this scope; update it (POST medallions/checkpoint/ or "
        "PATCH) or mark it stale first.",
        {"medallion_id": str(existing.medallion_id) if existing else None},
    )


@transaction.atomic
def medallion_create(
    *, workspace: Workspace, document: schema.MedallionDraft | dict[str, Any], actor: Actor
) -> Medallion:
    """Store an agent-written medallion (version 1, active). Conflict if an active one has the same scope."""
    draft = (
        document
        if isinstance(document, schema.MedallionDraft)
        else parse_input(schema.MedallionDraft.from_dict, document)
    )
    scope = _scope(draft.scope)
    thread = None
    if draft.source_thread_id is not None:
        thread = Thread.objects.for_workspace(workspace).filter(thread_id=draft.source_thread_id).first()
        if thread is None:
            raise NotFound(f"Thread {draft.source_thread_id!r} not found.")
    now = timezone.now()
    try:
        with transaction.atomic():
            medallion = Medallion.objects.create(
                workspace=workspace,
                **scope_fields(scope),
                model=draft.model,
                knowledge_min_ts=draft.knowledge_min_ts,
                knowledge_max_ts=draft.knowledge_max_ts,
                source_thread=thread,
                created_at=now,
                updated_at=now,
                **content_fields(draft.content),
            )
    except IntegrityError as exc:
        raise _active_conflict(workspace, scope.scope_key) from exc
    revision_record(medallion, actor_label=actor.label)
    medallion_audit(
        medallion,
        actor=actor,
        action="medallion.create",
        details={"scope": scope.to_dict()},
    )
    return Medallion.objects.for_api().get(pk=medallion.pk)


@transaction.atomic
def medallion_update(
    *,
    medallion: Medallion,
    changes: schema.MedallionPatch | dict[str, Any],
    actor: Actor,
    expected_version: int | None = None,
) -> Medallion:
    """Change status and/or content (PATCH): a new version with its revision. A status other than active
    frees the scope for a new medallion; making one active again conflicts if the scope is taken.
    `expected_version` (If-Match) guards against overwriting a version the caller has not seen.
    A patch that changes nothing is a no-op (no new version), unless it moves `meta.updated_at` later: then
    it is a new version at the server's time (see docs/integrations/medallion.md)."""
    patch = (
        changes
        if isinstance(changes, schema.MedallionPatch)
        else parse_input(schema.MedallionPatch.from_dict, changes)
    )
    locked = Medallion.objects.select_for_update(of=("self",)).for_api().get(pk=medallion.pk)
    if expected_version is not None and locked.version != expected_version:
        raise PreconditionFailed(
            f"The medallion is at version {locked.version}, not {expected_version}.",
            {"version": locked.version},
        )
    before = {field: getattr(locked, field) for field in _TRACKED}
    for field, value in {**content_fields(_patched(medallion_content(locked), patch)), **patch.meta}.items():
        setattr(locked, field, value)
    if patch.status is not None:
        locked.status = patch.status
    if (
        locked.knowledge_min_ts
        and locked.knowledge_max_ts
        and locked.knowledge_min_ts > locked.knowledge_max_ts
    ):
        raise ValidationFailed(
            "knowledge_min_ts must not be later than knowledge_max_ts.", {"path": "$.meta"}
        )
    changed = [field for field in _TRACKED if getattr(locked, field) != before[field]]
    touched = patch.updated_at is not None and patch.updated_at > locked.updated_at
    if not changed and not touched:
        return locked
    locked.version += 1
    locked.updated_at = max(timezone.now(), locked.created_at)
    try:
        with transaction.atomic():
            locked.save(update_fields=[*changed, "version", "updated_at"])
    except IntegrityError as exc:
        raise _active_conflict(locked.workspace, locked.scope_key) from exc
    revision_record(locked, actor_label=actor.label)
    medallion_audit(
        locked,
        actor=actor,
        action="medallion.update",
        details={"version": locked.version, "fields": changed, "status": [before["status"], locked.status]},
    )
    return Medallion.objects.for_api().get(pk=locked.pk)


def _patched(current: schema.MedallionContent, patch: schema.MedallionPatch) -> schema.MedallionContent:
    """The content with the parts the patch sends replaced (an empty list is a value, not "unchanged")."""
    return schema.MedallionContent(
        summary=patch.summary or current.summary,
        decisions=current.decisions if patch.decisions is None else patch.decisions,
        open_questions=current.open_questions if patch.open_questions is None else patch.open_questions,
        affordances=patch.affordances or current.affordances,
    )


_TRACKED = (
    "status",
    "high_level",
    "subsystems",
    "decisions",
    "open_questions",
    "affordances",
    "model",
    "knowledge_min_ts",
    "knowledge_max_ts",
)


@transaction.atomic
def medallion_delete(*, medallion: Medallion, actor: Actor) -> None:
    """Delete a medallion and its revisions (the audit event keeps what it was)."""
    medallion_audit(
        medallion,
        actor=actor,
        action="medallion.delete",
        details={
            "scope": {"graph_nodes": medallion.graph_nodes, "tags": medallion.tags},
            "version": medallion.version,
            "status": medallion.status,
        },
    )
    medallion.delete()


def medallion_checkpoint_submit(
    *,
    workspace: Workspace,
    scope: schema.MedallionScope | dict[str, Any],
    evidence: schema.Evidence | dict[str, Any],
    actor: Actor,
    thread: Thread | None = None,
) -> Job:
    """Queue `checkpoint_session(scope, evidence)`: create or update the medallion of exactly this scope.

    Input is validated now (400 before anything is queued); the provider runs in the job.
    """
    valid_scope = _scope(scope)
    valid_evidence = (
        evidence
        if isinstance(evidence, schema.Evidence)
        else parse_input(schema.Evidence.from_dict, evidence)
    )
    params = {
        "operation": "checkpoint",
        "scope": valid_scope.to_dict(),
        "evidence": valid_evidence.to_dict(),
        "thread_id": thread.thread_id if thread is not None else None,
    }
    with transaction.atomic():
        return job_submit(
            workspace=workspace,
            kind=Job.Kind.SUMMARIZE,
            params=params,
            task="checkpoints.tasks.medallion_checkpoint_job",
            actor=actor,
        )


def medallion_checkpoint(job: Job) -> dict[str, Any]:
    """Job handler of `medallion_checkpoint_submit`: upsert by exact scope with the configured provider.

    Idempotent: if this job already wrote a revision (its worker died before recording success), that
    result is returned instead of applying the evidence twice.
    """
    previous = MedallionRevision.objects.filter(job=job).select_related("medallion").first()
    if previous is not None:
        return _result(previous.medallion, created=previous.version == 1, version=previous.version)
    params = job.params
    scope = schema.MedallionScope.from_dict(params["scope"])
    evidence = schema.Evidence.from_dict(params["evidence"])
    thread = None
    if params.get("thread_id"):
        thread = Thread.objects.filter(workspace=job.workspace, thread_id=params["thread_id"]).first()
    outcome = medallion_upsert(
        workspace=job.workspace,
        scope=scope,
        evidence=evidence,
        provider=get_provider(),
        actor_label=job_actor(job).label,
        job=job,
        source_thread=thread,
        window=(job.created_at, job.created_at),
    )
    return _result(outcome.medallion, created=outcome.created, version=outcome.medallion.version)


def _result(medallion: Medallion, *, created: bool, version: int) -> dict[str, Any]:
    return {"medallion_id": str(medallion.medallion_id), "version": version, "created": created}
