"""The workspace retention policy service."""

from __future__ import annotations

from typing import Any, cast

import pytest

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import AuditEvent, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.retention import retention_policy, retention_policy_update

pytestmark = pytest.mark.django_db


def test_it_changes_only_the_fields_given_and_audits_before_and_after(workspace: Workspace) -> None:
    updated = retention_policy_update(workspace=workspace, actor=Actor.system("admin"), keep_latest=5)
    assert retention_policy(Workspace.objects.get(pk=workspace.pk)) == {
        "default_ttl_seconds": None,
        "keep_latest": 5,
        "thread_idle_ttl_seconds": None,
        "tombstone_retention_seconds": 30 * 24 * 3600,
        "auto_summarize_every": None,
    }
    assert updated.keep_latest == workspace.keep_latest == 5
    event = AuditEvent.objects.get(action="retention.policy")
    assert event.details["before"]["keep_latest"] is None
    assert event.details["after"]["keep_latest"] == 5


def test_it_writes_no_audit_event_when_nothing_changes(workspace: Workspace) -> None:
    retention_policy_update(workspace=workspace, actor=Actor.system("admin"), keep_latest=None)
    assert not AuditEvent.objects.filter(action="retention.policy").exists()


def test_it_refuses_fields_that_are_not_policy(workspace: Workspace) -> None:
    with pytest.raises(ValidationFailed):
        retention_policy_update(
            workspace=workspace, actor=Actor.system("admin"), **cast(Any, {"slug": "evil"})
        )
    assert Workspace.objects.get(pk=workspace.pk).slug == "acme"
