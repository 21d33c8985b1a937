"""Medallion reads: lookup by public id, scope queries, and the medallion.v1 document of a stored row."""

from __future__ import annotations

import uuid
from typing import Any

from checkpoints import medallion_schema as schema
from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.models import Medallion, MedallionRevision, Workspace
from checkpoints.models.medallion import MedallionQuerySet


def medallion_document(medallion: Medallion) -> schema.Medallion:
    """The medallion.v1 document of a stored medallion (its current version)."""
    return schema.Medallion.build(
        schema.MedallionMeta(
            medallion_id=str(medallion.medallion_id),
            model=medallion.model,
            created_at=medallion.created_at,
            updated_at=medallion.updated_at,
            version=medallion.version,
            status=medallion.status,
            schema_version=medallion.schema_version,
            knowledge_min_ts=medallion.knowledge_min_ts,
            knowledge_max_ts=medallion.knowledge_max_ts,
            source_thread_id=medallion.source_thread_public_id,
        ),
        schema.MedallionScope(graph_nodes=medallion.graph_nodes, tags=medallion.tags),
        medallion_content(medallion),
    )


def medallion_content(medallion: Medallion) -> schema.MedallionContent:
    """The stored content as dataclasses (it was validated on the way in; parsing again keeps one path)."""
    return schema.MedallionContent.from_dict(
        {
            "summary": {"high_level": medallion.high_level, "subsystems": medallion.subsystems},
            "decisions": medallion.decisions,
            "open_questions": medallion.open_questions,
            "affordances": medallion.affordances,
        }
    )


def medallion_get(*, workspace: Workspace, medallion_id: str | uuid.UUID) -> Medallion:
    """The workspace's medallion with this public id; a malformed id or another workspace's medallion is
    NotFound, exactly like a missing one."""
    try:
        key = medallion_id if isinstance(medallion_id, uuid.UUID) else uuid.UUID(str(medallion_id))
    except ValueError:
        raise NotFound(f"Medallion {str(medallion_id)[:64]!r} not found.") from None
    medallion = Medallion.objects.for_workspace(workspace).for_api().filter(medallion_id=key).first()
    if medallion is None:
        raise NotFound(f"Medallion {key} not found.")
    return medallion


def scope_from_query(graph_nodes: list[str], tags: list[str]) -> schema.MedallionScope:
    """A requested scope; both sides empty is refused (it would match everything: docs/medallions.md)."""
    try:
        scope = schema.MedallionScope.from_dict({"graph_nodes": graph_nodes, "tags": tags})
    except schema.SchemaError as exc:
        raise ValidationFailed(f"Invalid scope: {exc}", {"path": exc.path}) from exc
    if scope.is_empty:
        raise ValidationFailed(
            "Give graph_nodes and/or tags: an empty scope would match every medallion.",
            {"graph_nodes": [], "tags": []},
        )
    return scope


def medallions_for_scope(
    *, workspace: Workspace, scope: schema.MedallionScope, statuses: tuple[str, ...] = ("active",)
) -> MedallionQuerySet:
    """Medallions whose graph_nodes contain every requested node AND whose tags share at least one requested
    tag (an empty side imposes nothing), newest `updated_at` first. One SQL query over the whole table
    (GIN-indexed on PostgreSQL), never a scan of the newest N rows."""
    if scope.is_empty:
        raise ValidationFailed("Give graph_nodes and/or tags: an empty scope would match every medallion.")
    return (
        Medallion.objects.for_workspace(workspace)
        .filter(status__in=statuses)
        .matching_scope(scope.graph_nodes, scope.tags)
        .for_api()
        .newest_first()
    )


def medallion_revisions(*, medallion: Medallion) -> Any:
    """Every version of a medallion, newest first (each with the evidence that produced it)."""
    return MedallionRevision.objects.filter(medallion=medallion).select_related("job").order_by("-version")
