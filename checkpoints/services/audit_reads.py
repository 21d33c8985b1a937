"""Who looked: one audit event per view of a checkpoint's state, of a diff and of an export
(docs/dashboard.md, "Audit log")."""

from __future__ import annotations

from typing import Any

from checkpoints.models import AuditEvent, Checkpoint, Workspace
from checkpoints.services.audit import Actor, audit_record


def _checkpoint_target(checkpoint: Checkpoint) -> str:
    return f"{checkpoint.thread.thread_id}/{checkpoint.namespace}/{checkpoint.checkpoint_id}"


def _checkpoint_event(
    *, workspace: Workspace, actor: Actor, action: str, checkpoint: Checkpoint, details: dict[str, Any]
) -> AuditEvent:
    return audit_record(
        workspace=workspace,
        actor=actor,
        action=action,
        target_type="checkpoint",
        target_id=_checkpoint_target(checkpoint),
        details={"checkpoint_id": checkpoint.checkpoint_id, "namespace": checkpoint.namespace, **details},
        agents=[checkpoint.agent_id],
    )


def checkpoint_view_record(
    *, workspace: Workspace, actor: Actor, checkpoint: Checkpoint, part: str
) -> AuditEvent:
    """Record that `actor` read a checkpoint's documents (`part`: "page" or the document downloaded)."""
    return _checkpoint_event(
        workspace=workspace,
        actor=actor,
        action="checkpoint.view",
        checkpoint=checkpoint,
        details={"part": part},
    )


def checkpoint_diff_view_record(
    *, workspace: Workspace, actor: Actor, checkpoint: Checkpoint, against: Checkpoint | None
) -> AuditEvent:
    """Record that `actor` read the diff of `checkpoint` against `against` (None: an empty document)."""
    return _checkpoint_event(
        workspace=workspace,
        actor=actor,
        action="checkpoint.view_diff",
        checkpoint=checkpoint,
        details={"against": _checkpoint_target(against) if against is not None else None},
    )


def audit_export_record(
    *, workspace: Workspace, actor: Actor, extension: str, filters: dict[str, Any]
) -> AuditEvent:
    """Record that `actor` exported the audit log (in `extension`, with the filters applied)."""
    return audit_record(
        workspace=workspace,
        actor=actor,
        action="audit.export",
        target_type="workspace",
        target_id=workspace.slug,
        details={"format": extension, "filters": filters},
    )
