"""When a handoff is taken: the one rule the API's `handoff_status` filter, the handoffs page and the agent
page all read (docs/dashboard.md, "Handoffs").

A handoff is the checkpoint `checkpoint_handoff` writes (`handoff_from` the source agent, `handoff_target`
the target). It is **taken** as soon as the target agent writes on the thread after it, whatever the client:
a checkpoint saved by that agent (through the API, the SDK or LangGraph's saver, in any namespace, whatever
its parent) or a message it sent (`name`). Until then it is **pending**: still in the target's inbox.

Everything is SQL expressions on a checkpoint queryset (correlated subqueries on the `checkpoint_ws_agent`
index and the thread's messages), so a list reads the status in the query that reads the handoffs.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery

from checkpoints.models import Checkpoint, Message
from checkpoints.models.checkpoint import CheckpointQuerySet

PENDING = "pending"
TAKEN = "taken"
HANDOFF_STATUSES = (PENDING, TAKEN)


def target_checkpoints_after() -> QuerySet[Checkpoint]:
    """Checkpoints the outer handoff's target saved on its thread after it, oldest first."""
    return Checkpoint.objects.filter(
        workspace=OuterRef("workspace"),
        agent_id=OuterRef("handoff_target"),
        thread=OuterRef("thread"),
        pk__gt=OuterRef("pk"),
    ).order_by("id")


def target_messages_after() -> QuerySet[Message]:
    """Messages the outer handoff's target sent on its thread after it, oldest first."""
    return Message.objects.filter(
        thread=OuterRef("thread"),
        name=OuterRef("handoff_target"),
        created_at__gt=OuterRef("created_at"),
    ).order_by("seq")


def handoff_taken() -> Q:
    """True for a handoff its target has taken (a later write of the target agent on the thread)."""
    return Q(Exists(target_checkpoints_after())) | Q(Exists(target_messages_after()))


def handoffs_with_status(queryset: CheckpointQuerySet, status: str | None = None) -> CheckpointQuerySet:
    """The handoffs of `queryset`, only the `status` ones ("pending" / "taken") if given."""
    handoffs = queryset.filter(handoff_target__isnull=False)
    if status == TAKEN:
        return handoffs.filter(handoff_taken())
    if status == PENDING:
        return handoffs.exclude(handoff_taken())
    return handoffs


def with_takeover(queryset: CheckpointQuerySet) -> CheckpointQuerySet:
    """Annotate each handoff with where its target took it up: `taken_checkpoint_id`,
    `taken_checkpoint_ns`, `taken_checkpoint_at` (its first later checkpoint) and `taken_message_seq`,
    `taken_message_at` (its first later message); all None while it is pending."""
    first_checkpoint = target_checkpoints_after()[:1]
    first_message = target_messages_after()[:1]
    return queryset.annotate(
        taken_checkpoint_id=Subquery(first_checkpoint.values("checkpoint_id")),
        taken_checkpoint_ns=Subquery(first_checkpoint.values("namespace")),
        taken_checkpoint_at=Subquery(first_checkpoint.values("created_at")),
        taken_message_seq=Subquery(first_message.values("seq")),
        taken_message_at=Subquery(first_message.values("created_at")),
    )
