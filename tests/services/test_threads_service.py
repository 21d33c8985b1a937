"""The thread services called directly (the dashboard, admin actions and jobs call them with their actor)."""

from __future__ import annotations

import pytest

from checkpoints.exceptions import Conflict, NotFound, ValidationFailed
from checkpoints.models import AuditEvent, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.threads import (
    thread_copy,
    thread_create,
    thread_delete,
    thread_fork,
    thread_prune,
    thread_storage,
    thread_update,
)
from tests.factories import WorkspaceFactory, make_checkpoint

pytestmark = pytest.mark.django_db

SYSTEM = Actor.system("test")


@pytest.fixture
def workspace() -> Workspace:
    return WorkspaceFactory.create()


def test_it_creates_with_normalised_tags_and_scope_and_audits_the_actor(workspace: Workspace) -> None:
    thread = thread_create(
        workspace=workspace,
        actor=SYSTEM,
        thread_id="t",
        tags=["b", " a", "b", ""],
        scope={"graph_nodes": ["z", "y ", "z"]},
    )
    assert thread.tags == ["b", "a"]
    assert thread.scope == {"graph_nodes": ["y", "z"], "tags": []}
    event = AuditEvent.objects.get(action="thread.create")
    assert (event.actor_type, event.target_id) == ("system", "t")
    with pytest.raises(Conflict):
        thread_create(workspace=workspace, actor=SYSTEM, thread_id="t")


@pytest.mark.parametrize("kwargs", [{"thread_id": "bad id"}, {"thread_id": ""}, {"ttl_seconds": 0}])
def test_it_refuses_invalid_threads(workspace: Workspace, kwargs: dict[str, object]) -> None:
    if kwargs.get("thread_id") == "":
        # An empty id means "assign one", as in the API.
        assert len(thread_create(workspace=workspace, actor=SYSTEM, **kwargs).thread_id) == 36  # type: ignore[arg-type]
        return
    with pytest.raises(ValidationFailed):
        thread_create(workspace=workspace, actor=SYSTEM, **kwargs)  # type: ignore[arg-type]


def test_it_refuses_unknown_update_fields_and_bad_ttls(workspace: Workspace) -> None:
    thread = thread_create(workspace=workspace, actor=SYSTEM, thread_id="t")
    with pytest.raises(ValidationFailed):
        thread_update(thread=thread, actor=SYSTEM, thread_id="renamed")
    with pytest.raises(ValidationFailed):
        thread_update(thread=thread, actor=SYSTEM, ttl_seconds=-5)
    updated = thread_update(thread=thread, actor=SYSTEM, metadata=None, pinned=True)
    assert updated.metadata == {} and updated.pinned


def test_it_refuses_to_work_on_a_thread_deleted_meanwhile(workspace: Workspace) -> None:
    thread = thread_create(workspace=workspace, actor=SYSTEM, thread_id="t")
    thread_delete(thread=thread, actor=SYSTEM)
    for call in (
        lambda: thread_delete(thread=thread, actor=SYSTEM),
        lambda: thread_update(thread=thread, actor=SYSTEM, name="x"),
        lambda: thread_prune(thread=thread, strategy="delete", actor=SYSTEM),
        lambda: thread_copy(source=thread, thread_id="c", actor=SYSTEM),
        lambda: thread_fork(source=thread, actor=SYSTEM),
    ):
        with pytest.raises(NotFound):
            call()
    assert not Thread.objects.exists()


def test_it_refuses_to_fork_from_a_checkpoint_of_another_thread(workspace: Workspace) -> None:
    make_checkpoint(workspace, "a")
    elsewhere = make_checkpoint(workspace, "b")
    source = Thread.objects.get(thread_id="a")
    with pytest.raises(NotFound):
        thread_fork(source=source, actor=SYSTEM, checkpoint=elsewhere, thread_id="f")
    assert not Thread.objects.filter(thread_id="f").exists()


def test_it_refuses_an_unknown_prune_strategy(workspace: Workspace) -> None:
    make_checkpoint(workspace, "t")
    with pytest.raises(ValidationFailed):
        thread_prune(thread=Thread.objects.get(thread_id="t"), strategy="everything", actor=SYSTEM)


def test_it_reports_zero_storage_for_an_empty_thread(workspace: Workspace) -> None:
    thread = thread_create(workspace=workspace, actor=SYSTEM, thread_id="t")
    assert thread_storage(thread=thread) == {
        "thread_id": "t",
        "namespaces": [],
        "messages": {"count": 0, "bytes": 0},
        "parts": {"count": 0, "bytes": 0},
        "totals": {
            "state_bytes": 0,
            "writes_bytes": 0,
            "messages_bytes": 0,
            "bytes": 0,
            "state_stored_bytes": 0,
            "stored_bytes": 0,
        },
    }
