"""Annotations (findings): create, delete and list an auditor's comments and verdicts on a thread or one of
its checkpoints; both writes are audited (docs/dashboard.md, "Findings")."""

from __future__ import annotations

import uuid

from django.db import transaction

from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.models import Annotation, Checkpoint, Thread, Workspace
from checkpoints.models.annotation import MAX_COMMENT_CHARS, AnnotationQuerySet
from checkpoints.services.audit import Actor, audit_record


def annotation_problems(*, comment: str, verdict: str) -> dict[str, list[str]]:
    """What is wrong with a comment and verdict, by field (empty when they are acceptable): the rule the API
    and the dashboard form both apply."""
    problems: dict[str, list[str]] = {}
    if not 1 <= len(comment) <= MAX_COMMENT_CHARS:
        problems["comment"] = [f"Write 1-{MAX_COMMENT_CHARS} characters."]
    elif "\x00" in comment:
        problems["comment"] = ["NUL characters are not allowed."]
    if verdict and verdict not in Annotation.Verdict.values:
        problems["verdict"] = [f"Use one of {', '.join(Annotation.Verdict.values)} or leave it out."]
    return problems


@transaction.atomic
def annotation_create(
    *,
    thread: Thread,
    actor: Actor,
    comment: str,
    verdict: str = "",
    checkpoint: Checkpoint | None = None,
) -> Annotation:
    """Record a finding on `thread`, or on `checkpoint` (which must be one of the thread's), audited as
    `annotation.create` with its comment and verdict in the event's details."""
    problems = annotation_problems(comment=comment, verdict=verdict)
    if checkpoint is not None and checkpoint.thread_id != thread.pk:
        problems["checkpoint_id"] = ["This checkpoint is not in the thread."]
    if problems:
        raise ValidationFailed(next(iter(problems.values()))[0], {"fields": problems})
    annotation = Annotation.objects.create(
        workspace_id=thread.workspace_id,
        thread=thread,
        checkpoint=checkpoint,
        comment=comment,
        verdict=verdict,
        actor_type=actor.type,
        actor_label=actor.label[:255],
    )
    _audit(annotation, actor, "annotation.create")
    return annotation


@transaction.atomic
def annotation_delete(*, annotation: Annotation, actor: Actor) -> None:
    """Delete one annotation, audited as `annotation.delete` with what it said."""
    deleted, _ = Annotation.objects.filter(pk=annotation.pk).delete()
    if not deleted:
        raise NotFound(f"Annotation {annotation.annotation_id} not found.")
    _audit(annotation, actor, "annotation.delete")


def _audit(annotation: Annotation, actor: Actor, action: str) -> None:
    checkpoint = annotation.checkpoint
    audit_record(
        workspace=annotation.thread.workspace,
        actor=actor,
        action=action,
        target_type="annotation",
        target_id=str(annotation.annotation_id),
        details={
            "thread_id": annotation.thread.thread_id,
            "checkpoint_id": checkpoint.checkpoint_id if checkpoint else None,
            "comment": annotation.comment,
            "verdict": annotation.verdict or None,
            "author": annotation.actor_label,
        },
        agents=[checkpoint.agent_id] if checkpoint and checkpoint.agent_id else (),
    )


def thread_annotations(*, thread: Thread) -> AnnotationQuerySet:
    """The thread's annotations (on it and on its checkpoints), newest first."""
    return Annotation.objects.for_thread(thread).for_display().newest_first()


def annotation_get(*, workspace: Workspace, thread: Thread, annotation_id: uuid.UUID) -> Annotation:
    """One annotation of the thread; another thread's or workspace's is NotFound, as if missing."""
    annotation = (
        thread_annotations(thread=thread)
        .filter(workspace=workspace, annotation_id=annotation_id)
        .select_related("thread__workspace")
        .first()
    )
    if annotation is None:
        raise NotFound(f"Annotation {annotation_id} not found in thread {thread.thread_id!r}.")
    return annotation


def checkpoint_annotations(checkpoint_pks: list[int]) -> dict[int, list[Annotation]]:
    """The annotations of these checkpoints, newest first, by checkpoint primary key: one query for a page
    of the timeline (its badges), whatever the page holds."""
    by_checkpoint: dict[int, list[Annotation]] = {}
    if not checkpoint_pks:
        return by_checkpoint
    queryset = Annotation.objects.filter(checkpoint_id__in=checkpoint_pks).newest_first()
    for annotation in queryset:
        by_checkpoint.setdefault(annotation.checkpoint_id, []).append(annotation)  # type: ignore[arg-type]
    return by_checkpoint
