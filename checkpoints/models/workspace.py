"""Workspaces (the tenant boundary), their API keys and their dashboard members."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from checkpoints.models.constraints import empty_or_positive


class WorkspaceQuerySet(models.QuerySet["Workspace"]):
    def for_user(self, user: object) -> WorkspaceQuerySet:
        """Workspaces a dashboard user may see: all for superusers, their memberships otherwise."""
        if getattr(user, "is_superuser", False):
            return self.all()
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(memberships__user=user)


class Workspace(models.Model):
    """A tenant. Every row of every other model belongs to exactly one workspace; nothing crosses them."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    # Retention policy (docs/retention.md). Null means "no such rule".
    default_ttl_seconds = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="TTL given to checkpoints saved without one."
    )
    keep_latest = models.PositiveIntegerField(
        null=True, blank=True, help_text="Keep only the newest N live checkpoints per thread and namespace."
    )
    thread_idle_ttl_seconds = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Delete threads (not pinned) idle for longer than this."
    )
    tombstone_retention_seconds = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        default=30 * 24 * 3600,
        help_text="Hard-delete tombstones older than this; empty keeps them forever (a full audit trail).",
    )
    auto_summarize_every = models.PositiveIntegerField(
        null=True, blank=True, help_text="Summarise a thread into its medallion after every N new messages."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = WorkspaceQuerySet.as_manager()

    class Meta:
        ordering: ClassVar = ["slug"]
        constraints: ClassVar = [
            empty_or_positive("default_ttl_seconds", "workspace_default_ttl_positive"),
            empty_or_positive("keep_latest", "workspace_keep_latest_positive"),
            empty_or_positive("thread_idle_ttl_seconds", "workspace_idle_ttl_positive"),
            empty_or_positive("tombstone_retention_seconds", "workspace_tombstone_retention_positive"),
        ]

    def __str__(self) -> str:
        return self.slug


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def usable(self, now: datetime | None = None) -> ApiKeyQuerySet:
        """Keys that authenticate right now: not revoked, not expired."""
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))


class ApiKey(models.Model):
    """An API key. Only its prefix (shown) and the SHA-256 of its secret are stored, never the secret."""

    class Scope(models.TextChoices):
        READ = "read"
        WRITE = "write"
        ADMIN = "admin"

    # read ⊂ write ⊂ admin: a key holds its scope and every scope below it.
    SCOPE_LEVELS: ClassVar[dict[str, int]] = {Scope.READ: 1, Scope.WRITE: 2, Scope.ADMIN: 3}

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.WRITE)
    throttle_rate = models.CharField(
        max_length=32,
        blank=True,
        help_text='Overrides the default rate for this key, e.g. "100/s" or "6000/min".',
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()
    # Not stored: on the request's copy of an authenticated key, its rate window's count when it was taken
    # together with authentication (checkpoints.storage.api_key_cache), as (counter key, count).
    window_hits: tuple[str, int] | None = None

    class Meta:
        ordering: ClassVar = ["-created_at"]
        indexes: ClassVar = [models.Index(fields=["workspace", "-created_at"], name="apikey_ws_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def has_scope(self, scope: str) -> bool:
        return self.SCOPE_LEVELS[self.scope] >= self.SCOPE_LEVELS[scope]

    @property
    def scopes(self) -> list[str]:
        """Every scope this key holds, lowest first."""
        return [s for s, level in self.SCOPE_LEVELS.items() if level <= self.SCOPE_LEVELS[self.scope]]

    def is_usable(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class Membership(models.Model):
    """A dashboard user's access to a workspace (superusers see every workspace without one)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace}"
