"""The audit log writer and the actor every audited service receives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checkpoints.models import ApiKey, AuditEvent, Workspace


@dataclass(frozen=True)
class Actor:
    """Who performs an operation: a dashboard user, an API key, or the system (jobs, beat)."""

    type: str
    label: str
    user_id: int | None = None
    api_key_id: int | None = None

    @classmethod
    def for_api_key(cls, key: ApiKey) -> Actor:
        return cls(
            type=AuditEvent.ActorType.API_KEY, label=f"key:{key.prefix} ({key.name})", api_key_id=key.pk
        )

    @classmethod
    def for_user(cls, user: Any) -> Actor:
        return cls(type=AuditEvent.ActorType.USER, label=f"user:{user.get_username()}", user_id=user.pk)

    @classmethod
    def system(cls, label: str = "system") -> Actor:
        return cls(type=AuditEvent.ActorType.SYSTEM, label=label)


def audit_record(
    *,
    workspace: Workspace,
    actor: Actor,
    action: str,
    target_type: str = "",
    target_id: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event. Call it inside the transaction of the operation it records."""
    return AuditEvent.objects.create(
        workspace=workspace,
        actor_type=actor.type,
        actor_user_id=actor.user_id,
        actor_api_key_id=actor.api_key_id,
        actor_label=actor.label[:255],
        action=action,
        target_type=target_type,
        target_id=target_id[:512],
        details=details or {},
    )
