"""The audit log writer and the actor every audited service receives."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from checkpoints.models import ApiKey, AuditEvent, AuditEventAgent, Workspace

# Keys of `details` that hold an agent's id (a handoff's two ends). The dashboard's audit log filters by them.
AGENT_DETAIL_KEYS = ("agent_id", "from_agent", "to_agent")


@dataclass(frozen=True)
class Actor:
    """Who performs an operation: a dashboard user, an API key, or the system (jobs, beat)."""

    type: str
    label: str
    user_id: int | None = None
    api_key_id: int | None = None
    # What a checkpoint records as its writer (Checkpoint.written_by): stable, unlike the key's name.
    writer: str = ""

    @classmethod
    def for_api_key(cls, key: ApiKey) -> Actor:
        return cls(
            type=AuditEvent.ActorType.API_KEY,
            label=f"key:{key.prefix} ({key.name})",
            api_key_id=key.pk,
            writer=f"key:{key.prefix}",
        )

    @classmethod
    def for_user(cls, user: Any) -> Actor:
        label = f"user:{user.get_username()}"
        return cls(type=AuditEvent.ActorType.USER, label=label, user_id=user.pk, writer=label[:160])

    @classmethod
    def system(cls, label: str = "system") -> Actor:
        return cls(type=AuditEvent.ActorType.SYSTEM, label=label, writer=label[:160])


def audit_record(
    *,
    workspace: Workspace,
    actor: Actor,
    action: str,
    target_type: str = "",
    target_id: str = "",
    details: dict[str, Any] | None = None,
    agents: Iterable[str] = (),
) -> AuditEvent:
    """Append one audit event. Call it inside the transaction of the operation it records.

    `agents` are the agents the event concerns besides those its details name (the agent of the
    checkpoint acted on); all of them are indexed for the audit log's agent filter.
    """
    event = AuditEvent.objects.create(
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
    named = agents_named(event.details, agents)
    if named:
        AuditEventAgent.objects.bulk_create(
            AuditEventAgent(event=event, workspace=workspace, agent_id=agent_id) for agent_id in named
        )
    return event


def agents_named(details: dict[str, Any], agents: Iterable[str] = ()) -> list[str]:
    """The distinct agent ids of an event: `agents` plus the string values of AGENT_DETAIL_KEYS."""
    found = [*agents, *(details.get(key) for key in AGENT_DETAIL_KEYS)]
    return sorted({agent[:255] for agent in found if isinstance(agent, str) and agent})
