"""messages_append and message_delete called directly (the dashboard, the SDK's server side and jobs do)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from checkpoints.exceptions import Conflict, NotFound, ValidationFailed
from checkpoints.models import AuditEvent, Message, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.messages import message_delete, messages_append
from tests.factories import WorkspaceFactory

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def workspace() -> Workspace:
    return WorkspaceFactory.create()


def test_it_never_goes_back_in_time_when_another_clock_was_ahead(workspace: Workspace) -> None:
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        [ahead] = messages_append(workspace=workspace, thread_id="t", messages=[{"role": "user"}])
    with time_machine.travel(T0, tick=False):
        later = messages_append(workspace=workspace, thread_id="t", messages=[{"role": "user"}] * 2)
    assert [m.seq for m in later] == [2, 3]
    assert ahead.created_at < later[0].created_at < later[1].created_at
    assert later[0].created_at == ahead.created_at + timedelta(microseconds=1)


def test_it_returns_the_batch_in_order_mixing_stored_and_new_messages(workspace: Workspace) -> None:
    messages_append(workspace=workspace, thread_id="t", messages=[{"message_id": "b", "role": "user"}])
    result = messages_append(
        workspace=workspace,
        thread_id="t",
        messages=[
            {"message_id": "a", "role": "user"},
            {"message_id": "b", "role": "user", "content": None, "metadata": None},  # null = absent
            {"message_id": "c", "role": "user"},
        ],
    )
    assert [(m.message_id, m.seq) for m in result] == [("a", 2), ("b", 1), ("c", 3)]


def test_it_leaves_a_pure_retry_without_any_write(workspace: Workspace) -> None:
    batch = [{"message_id": "a", "role": "user", "content": "x"}]
    with time_machine.travel(T0, tick=False):
        messages_append(workspace=workspace, thread_id="t", messages=batch)
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        messages_append(workspace=workspace, thread_id="t", messages=batch)
    thread = Thread.objects.get(thread_id="t")
    assert thread.updated_at == T0 and thread.last_message_seq == 1


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user"}] * 1001,
        [{"role": "robot"}],
        [{"role": "user", "message_id": "a b"}],
        [{"role": "user", "metadata": []}],
        [{"role": "user", "content": 3}],
    ],
)
def test_it_refuses_invalid_batches_at_the_service_too(
    workspace: Workspace, messages: list[dict[str, Any]]
) -> None:
    with pytest.raises(ValidationFailed):
        messages_append(workspace=workspace, thread_id="t", messages=messages)
    assert not Thread.objects.exists()


def test_it_raises_conflict_naming_every_differing_message(workspace: Workspace) -> None:
    messages_append(
        workspace=workspace,
        thread_id="t",
        messages=[{"message_id": "a", "role": "user"}, {"message_id": "b", "role": "user"}],
    )
    with pytest.raises(Conflict) as caught:
        messages_append(
            workspace=workspace,
            thread_id="t",
            messages=[
                {"message_id": "a", "role": "assistant"},
                {"message_id": "b", "role": "user", "usage": {"tokens": 1}},
            ],
        )
    assert caught.value.details["conflicts"] == [
        {"message_id": "a", "differing_fields": ["role"]},
        {"message_id": "b", "differing_fields": ["usage"]},
    ]


def test_it_refuses_to_append_into_another_users_thread(workspace: Workspace) -> None:
    messages_append(workspace=workspace, thread_id="t", messages=[{"role": "user"}], user_id="alice")
    with pytest.raises(NotFound):
        messages_append(workspace=workspace, thread_id="t", messages=[{"role": "user"}], user_id="bob")
    with pytest.raises(NotFound):
        messages_append(workspace=workspace, thread_id="t", messages=[{"role": "user"}], user_id="")
    assert Message.objects.count() == 1


def test_it_deletes_a_message_once_with_the_actor_in_the_audit_log(workspace: Workspace) -> None:
    [message] = messages_append(workspace=workspace, thread_id="t", messages=[{"role": "user"}])
    message_delete(message=message, actor=Actor.system("janitor"))
    event = AuditEvent.objects.get(action="message.delete")
    assert (event.actor_type, event.actor_label) == ("system", "janitor")
    with pytest.raises(NotFound):
        message_delete(message=message, actor=Actor.system())
