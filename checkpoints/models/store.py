"""Long-term memory: LangGraph store items (docs/store.md). An item is a JSON object under a namespace and a
key, with an optional TTL in minutes and optional vectors for search by meaning."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.utils import timezone

from checkpoints.models.constraints import empty_or_positive
from checkpoints.models.workspace import Workspace

# Labels are joined by this character in `StoreItem.namespace`; LangGraph forbids it inside a label.
NAMESPACE_SEPARATOR = "."


class StoreItemQuerySet(models.QuerySet["StoreItem"]):
    def live(self, now: datetime | None = None) -> StoreItemQuerySet:
        """Items not expired: an expired item is invisible to every read before any sweep removes it."""
        return self.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now or timezone.now()))

    def expired(self, now: datetime | None = None) -> StoreItemQuerySet:
        return self.filter(expires_at__lte=now or timezone.now())


class StoreItem(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    # The labels joined by NAMESPACE_SEPARATOR, e.g. "users.alice.memories".
    namespace = models.CharField(max_length=1024)
    key = models.CharField(max_length=1024)
    value = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # The TTL the item was written with (minutes; null: none) and when it ends; a read may push it back.
    ttl_minutes = models.FloatField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # Vectors for search by meaning: one float32 vector per embedded text, packed (checkpoints.services
    # .store_vectors). Null: the item is not indexed.
    vectors = models.BinaryField(null=True, blank=True)

    objects = StoreItemQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["workspace", "namespace", "key"], name="store_item_unique"),
            empty_or_positive("ttl_minutes", "store_item_ttl_positive"),
        ]
        indexes: ClassVar = [
            models.Index(fields=["workspace", "-updated_at"], name="store_item_ws_updated"),
            models.Index(fields=["expires_at"], name="store_item_expires"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.key}"

    @property
    def namespace_labels(self) -> list[str]:
        return self.namespace.split(NAMESPACE_SEPARATOR)
