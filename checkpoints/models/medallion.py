"""Medallions (LLM-written semantic summaries found by scope) and their revisions."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from checkpoints.ids import uuid7
from checkpoints.models.thread import Thread
from checkpoints.models.workspace import Workspace


class MedallionQuerySet(models.QuerySet["Medallion"]):
    def for_workspace(self, workspace: Workspace) -> MedallionQuerySet:
        return self.filter(workspace=workspace)

    def active(self) -> MedallionQuerySet:
        return self.filter(status=Medallion.Status.ACTIVE)

    def matching_scope(self, graph_nodes: list[str], tags: list[str]) -> MedallionQuerySet:
        """graph_nodes ⊇ requested nodes AND tags overlap the requested tags, in SQL (complete at any size).

        An empty requested list imposes no condition on its side; callers refuse a scope with both empty.
        """
        queryset = self
        if graph_nodes:
            queryset = queryset.filter(graph_nodes__has_all_elements=graph_nodes)
        if tags:
            queryset = queryset.filter(tags__has_any_element=tags)
        return queryset

    def newest_first(self) -> MedallionQuerySet:
        return self.order_by("-updated_at", "-id")

    def for_api(self) -> MedallionQuerySet:
        """With the source thread's public id (a join, not a query per row)."""
        return self.annotate(source_thread_public_id=F("source_thread__thread_id"))


class Medallion(models.Model):
    """The current version of a medallion (schema medallion.v1); every version is a MedallionRevision."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        STALE = "stale"
        SUPERSEDED = "superseded"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="medallions")
    medallion_id = models.UUIDField(default=uuid7, unique=True, editable=False)
    # Normalised scope: stripped, deduplicated, sorted. scope_key is the hash of both lists.
    graph_nodes = models.JSONField(default=list)
    tags = models.JSONField(default=list)
    scope_key = models.CharField(max_length=64)
    schema_version = models.CharField(max_length=32, default="medallion.v1")
    model = models.CharField(max_length=255, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    version = models.PositiveIntegerField(default=1)
    high_level = models.CharField(max_length=300)
    subsystems = models.JSONField(default=list, blank=True)
    decisions = models.JSONField(default=list, blank=True)
    open_questions = models.JSONField(default=list, blank=True)
    affordances = models.JSONField(default=dict, blank=True)
    knowledge_min_ts = models.DateTimeField(null=True, blank=True)
    knowledge_max_ts = models.DateTimeField(null=True, blank=True)
    source_thread = models.ForeignKey(
        Thread, null=True, blank=True, on_delete=models.SET_NULL, related_name="medallions"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # The embedding of the current version's text for search by meaning, packed like a store item's vectors
    # (checkpoints.services.store_vectors). Null: not embedded yet (docs/medallions.md, "Search by meaning").
    vector = models.BinaryField(null=True, blank=True, editable=False)

    objects = MedallionQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            # One active medallion per exact scope: the database settles concurrent upserts.
            models.UniqueConstraint(
                fields=["workspace", "scope_key"],
                name="medallion_one_active_per_scope",
                condition=Q(status="active"),
            ),
            models.CheckConstraint(
                condition=Q(updated_at__gte=F("created_at")), name="medallion_updated_after_created"
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="medallion_version_positive"),
        ]
        indexes: ClassVar = [
            models.Index(
                fields=["workspace", "status", "-updated_at", "-id"], name="medallion_ws_status_updated"
            ),
            models.Index(fields=["workspace", "scope_key"], name="medallion_ws_scope"),
        ]

    def __str__(self) -> str:
        return str(self.medallion_id)

    @property
    def source_thread_public_id(self) -> str | None:
        """The source thread's thread_id: annotated by `for_api()`, else read through the relation."""
        if "source_thread_public_id" in self.__dict__:
            return self.__dict__["source_thread_public_id"]
        thread = self.source_thread if self.source_thread_id else None
        return thread.thread_id if thread is not None else None

    @source_thread_public_id.setter
    def source_thread_public_id(self, value: str | None) -> None:
        # QuerySet.annotate() sets the attribute on each row; keep it where the getter looks.
        self.__dict__["source_thread_public_id"] = value


class MedallionRevision(models.Model):
    """One version of a medallion, with the evidence that produced it. Never updated after insert."""

    medallion = models.ForeignKey(Medallion, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Medallion.Status.choices)
    content = models.JSONField(help_text="The full medallion document at this version.")
    evidence = models.JSONField(null=True, blank=True)
    model = models.CharField(max_length=255, blank=True, default="")
    job = models.ForeignKey(
        "checkpoints.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["medallion", "version"], name="medallion_revision_unique_version"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.medallion_id} v{self.version}"
