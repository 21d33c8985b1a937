"""The audit log's agent filter: one AuditEventAgent row per agent an event names (a handoff's two ends,
the agent of the checkpoint expired, re-timed or forked from), indexed by workspace and agent, newest event
first. Existing events are backfilled from their details and, for checkpoint targets, from the checkpoint
they name when it still exists."""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

AGENT_DETAIL_KEYS = ("agent_id", "from_agent", "to_agent")
# Checkpoint events whose agent is the target checkpoint's (a copy of the rule audit_record's callers follow).
CHECKPOINT_ACTIONS = ("checkpoint.expire", "checkpoint.ttl", "checkpoint.handoff")
BATCH = 2_000


def _checkpoint_agent(apps: Any, event: Any) -> str | None:
    """The agent of the checkpoint a "thread/namespace/checkpoint_id" target names, if it still exists."""
    thread_id, _, rest = event.target_id.partition("/")
    namespace, _, checkpoint_id = rest.rpartition("/")
    checkpoint = apps.get_model("checkpoints", "Checkpoint")
    return (
        checkpoint.objects.filter(
            workspace_id=event.workspace_id,
            thread__thread_id=thread_id,
            namespace=namespace,
            checkpoint_id=checkpoint_id,
        )
        .values_list("agent_id", flat=True)
        .first()
    )


def backfill(apps: Any, schema_editor: Any) -> None:
    audit_event = apps.get_model("checkpoints", "AuditEvent")
    audit_event_agent = apps.get_model("checkpoints", "AuditEventAgent")
    last = 0
    while True:
        events = list(audit_event.objects.filter(pk__gt=last).order_by("pk")[:BATCH])
        if not events:
            return
        rows = []
        for event in events:
            details = event.details if isinstance(event.details, dict) else {}
            found = {details.get(key) for key in AGENT_DETAIL_KEYS}
            if event.target_type == "checkpoint" and event.action in CHECKPOINT_ACTIONS:
                found.add(_checkpoint_agent(apps, event))
            rows += [
                audit_event_agent(event_id=event.pk, workspace_id=event.workspace_id, agent_id=agent[:255])
                for agent in sorted(a for a in found if isinstance(a, str) and a)
            ]
        audit_event_agent.objects.bulk_create(rows, ignore_conflicts=True)
        last = events[-1].pk


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0008_dashboard_search")]

    operations = [
        migrations.CreateModel(
            name="AuditEventAgent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("agent_id", models.CharField(max_length=255)),
                (
                    "event",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="agents",
                        to="checkpoints.auditevent",
                    ),
                ),
                (
                    "workspace",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="checkpoints.workspace",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["workspace", "agent_id", "-event"], name="audit_agent_ws")],
                "constraints": [
                    models.UniqueConstraint(fields=("event", "agent_id"), name="audit_agent_unique")
                ],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
