"""A save's touch and insert run as one statement on PostgreSQL and in steps on SQLite (which has no
data-modifying CTEs: `save_sql.insert_checkpoint`). The same generated saves, run both ways on PostgreSQL,
leave the same rows and give the same answers, so the default (SQLite) run tests the save production runs
(docs/architecture.md, "One definition per concept")."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkpoints.exceptions import Conflict, Gone, PreconditionFailed, ValidationFailed
from checkpoints.models import Checkpoint, StoredValue, Thread, Workspace
from checkpoints.services.checkpoint_records import UNSET
from checkpoints.services.checkpoint_save import checkpoint_save
from checkpoints.storage import save_sql
from tests.factories import WorkspaceFactory
from tests.storage.test_stored_values import chat

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
SAVES = st.lists(
    st.fixed_dictionaries(
        {
            "checkpoint_id": st.sampled_from(["a", "b", "c"]),
            "parent_id": st.sampled_from([UNSET, None, "a"]),
            "ttl_seconds": st.sampled_from([UNSET, None, 60]),
            "pinned": st.booleans(),
            "expected_head": st.sampled_from([UNSET, ["*"], ["a"]]),
            "state": st.sampled_from(["small", "large", "other"]),
            "namespace": st.sampled_from(["", "sub"]),
        }
    ),
    min_size=1,
    max_size=5,
)
STATES: dict[str, Any] = {"small": {"step": 1}, "large": chat(40), "other": chat(41)}


def run(saves: list[dict[str, Any]], *, in_steps: bool) -> tuple[list[Any], list[Any], Any, list[Any]]:
    """Run the saves in a new workspace; what each answered, and the checkpoint, thread and part rows."""
    workspace: Workspace = WorkspaceFactory.create()
    answers: list[Any] = []
    insert = functools.partial(save_sql.insert_checkpoint, in_steps=in_steps)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(save_sql, "insert_checkpoint", insert)
        for save in saves:
            fields = {name: value for name, value in save.items() if value is not UNSET}
            fields["state"] = STATES[save["state"]]
            try:
                result = checkpoint_save(workspace=workspace, thread_id="t", agent_id="agent", **fields)
            except (Conflict, Gone, PreconditionFailed, ValidationFailed) as refused:
                answers.append((type(refused).__name__, str(refused)))
            else:
                saved = result.checkpoint
                answers.append((result.created, saved.checkpoint_id, saved.message_seq))
    checkpoints = list(
        Checkpoint.objects.filter(workspace=workspace)
        .order_by("id")
        .values_list(*(f.attname for f in Checkpoint._meta.concrete_fields if f.attname not in _ROW_KEYS))
    )
    thread = (
        Thread.objects.filter(workspace=workspace)
        .values_list("state_version", "updated_at", "expires_at", "last_message_seq", "ttl_seconds")
        .first()
    )
    parts = list(
        StoredValue.objects.filter(workspace=workspace)
        .order_by("digest")
        .values_list("digest", "body", "size_bytes", "used_at")
    )
    return answers, checkpoints, thread, parts


_ROW_KEYS = {"id", "workspace_id", "thread_id"}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(saves=SAVES)
def test_one_statement_and_steps_leave_the_same_rows(
    saves: list[dict[str, Any]], time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    in_one = run(saves, in_steps=False)
    in_steps = run(saves, in_steps=True)
    assert in_steps == in_one, saves
