"""Expiry at read time (no sweep needed), pinning, TTL changes, and expire-now tombstones."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from checkpoints.integrity import format_timestamp
from checkpoints.models import AuditEvent, Checkpoint, PendingWrite, Workspace
from tests.api.errors import assert_not_found
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
THREAD = "/api/v1/threads/t1/"
CPS = f"{THREAD}checkpoints/"


@pytest.fixture
def clock() -> Iterator[Any]:
    with time_machine.travel(T0, tick=False) as traveller:
        yield traveller


def _save(api: ApiClient, checkpoint_id: str, **fields: Any) -> dict[str, Any]:
    response = api.post(
        CPS, {"checkpoint_id": checkpoint_id, "agent_id": "a", "state": {"id": checkpoint_id}, **fields}
    )
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.fixture
def expiring(api: ApiClient, clock: Any) -> dict[str, Any]:
    """c1 (no expiry) <- c2 (expires at T0 + 60 s), with a pending write on c2."""
    _save(api, "c1")
    c2 = _save(api, "c2", ttl_seconds=60)
    api.post(f"{CPS}c2/writes/", {"task_id": "task", "writes": [{"channel": "ch", "value": 1}]})
    return c2


def _gone(response: Any, checkpoint_id: str, expired_at: datetime) -> dict[str, Any]:
    assert response.status_code == 410, response.content
    error = response.json()["error"]
    assert error["code"] == "gone"
    tombstone = error["details"]["checkpoint"]
    assert tombstone["checkpoint_id"] == checkpoint_id
    assert tombstone["expired_at"] == format_timestamp(expired_at)
    assert tombstone["state"] is None and tombstone["context"] is None and tombstone["metadata"] is None
    return tombstone


def test_it_serves_a_checkpoint_until_just_before_its_expiry(
    api: ApiClient, expiring: dict[str, Any], clock: Any
) -> None:
    assert expiring["expires_at"] == format_timestamp(T0 + timedelta(seconds=60))
    clock.move_to(T0 + timedelta(seconds=59, microseconds=999_999))
    assert api.get(f"{CPS}c2/").status_code == 200
    assert api.get(f"{THREAD}state/").json()["checkpoint_id"] == "c2"


def test_it_makes_an_expired_checkpoint_gone_everywhere_at_expires_at_without_a_sweep(
    api: ApiClient, expiring: dict[str, Any], clock: Any
) -> None:
    expiry = T0 + timedelta(seconds=60)
    assert api.get(f"{THREAD}state/").json()["checkpoint_id"] == "c2"  # warms the head cache
    clock.move_to(expiry)

    tombstone = _gone(api.get(f"{CPS}c2/"), "c2", expiry)
    assert tombstone["parent_id"] == "c1" and tombstone["checksum"] == expiring["checksum"]
    _gone(api.get("/api/v1/checkpoints/c2/"), "c2", expiry)
    for response in (
        api.get(f"{CPS}c2/diff/"),
        api.post(f"{CPS}c2/handoff/", {"target_agent_id": "b"}),
        api.post(f"{CPS}c2/ttl/", {"ttl_seconds": 60}),
        api.delete(f"{CPS}c2/"),
    ):
        _gone(response, "c2", expiry)
    for response in (
        api.get(f"{CPS}c2/writes/"),
        api.post(f"{CPS}c2/writes/", {"task_id": "task", "writes": [{"channel": "ch", "value": 2}]}),
        # An idempotent retry of the expired id cannot bring it back.
        api.post(CPS, {"checkpoint_id": "c2", "agent_id": "a", "state": {"id": "c2"}}),
    ):
        assert response.status_code == 410
        assert response.json()["error"]["code"] == "gone"
    # Diffing a live checkpoint against it is gone too: its state no longer exists for readers.
    _save(api, "c3", parent_id="c2")
    _gone(api.get(f"{CPS}c3/diff/"), "c2", expiry)

    timeline = api.get(CPS).json()["results"]
    assert [c["checkpoint_id"] for c in timeline] == ["c3", "c1"]
    workspace_timeline = api.get("/api/v1/checkpoints/").json()["results"]
    assert [c["checkpoint_id"] for c in workspace_timeline] == ["c3", "c1"]
    with_tombstones = api.get(CPS, {"include_tombstones": "true", "include_state": "true"}).json()["results"]
    assert [(c["checkpoint_id"], c["expired_at"], c["state"]) for c in with_tombstones] == [
        ("c3", None, {"id": "c3"}),
        ("c2", format_timestamp(expiry), None),
        ("c1", None, {"id": "c1"}),
    ]
    # No sweep ran: the row still holds its payload, only reads treat it as gone.
    row = Checkpoint.objects.get(checkpoint_id="c2")
    assert row.expired_at is None and row.state is not None
    assert PendingWrite.objects.filter(checkpoint_id="c2").count() == 1


def test_it_falls_back_to_the_previous_live_checkpoint_for_the_state(
    api: ApiClient,
    expiring: dict[str, Any],
    clock: Any,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        _save(api, "c3", ttl_seconds=30)  # written through to the head cache on commit
    assert api.get(f"{THREAD}state/").json()["checkpoint_id"] == "c3"
    clock.move_to(T0 + timedelta(seconds=30))
    assert api.get(f"{THREAD}state/").json()["checkpoint_id"] == "c2"
    clock.move_to(T0 + timedelta(seconds=60))
    state = api.get(f"{THREAD}state/")
    assert state.status_code == 200
    assert state.json()["checkpoint_id"] == "c1"
    assert state.json()["state"] == {"id": "c1"}
    # A new save's parent defaults to the live head, not to the expired checkpoints.
    assert _save(api, "c4")["parent_id"] == "c1"


def test_it_answers_404_for_the_state_once_every_checkpoint_expired(api: ApiClient, clock: Any) -> None:
    _save(api, "only", ttl_seconds=5)
    clock.move_to(T0 + timedelta(seconds=5))
    assert_not_found(api.get(f"{THREAD}state/"), "Thread 't1' has no checkpoint in namespace ''.")


def test_it_never_expires_a_pinned_checkpoint(api: ApiClient, clock: Any) -> None:
    _save(api, "pinned", ttl_seconds=5, pinned=True)
    clock.move_to(T0 + timedelta(days=3650))
    restored = api.get(f"{CPS}pinned/")
    assert restored.status_code == 200
    assert restored.json()["pinned"] is True and restored.json()["expired_at"] is None
    assert api.get(f"{THREAD}state/").json()["checkpoint_id"] == "pinned"


def test_it_sets_extends_and_clears_the_ttl(api: ApiClient, clock: Any) -> None:
    _save(api, "c1", ttl_seconds=60)
    clock.move_to(T0 + timedelta(seconds=30))
    extended = api.post(f"{CPS}c1/ttl/", {"ttl_seconds": 3600})
    assert extended.status_code == 200
    assert extended.json()["expires_at"] == format_timestamp(T0 + timedelta(seconds=3630))
    assert "state" not in extended.json()
    clock.move_to(T0 + timedelta(seconds=3000))
    assert api.get(f"{CPS}c1/").status_code == 200
    cleared = api.post(f"{CPS}c1/ttl/", {"ttl_seconds": None})
    assert cleared.status_code == 200 and cleared.json()["expires_at"] is None
    clock.move_to(T0 + timedelta(days=365))
    assert api.get(f"{CPS}c1/").status_code == 200
    shortened = api.post(f"{CPS}c1/ttl/", {"ttl_seconds": 1})
    assert shortened.json()["expires_at"] == format_timestamp(T0 + timedelta(days=365, seconds=1))
    clock.move_to(T0 + timedelta(days=365, seconds=1))
    assert api.get(f"{CPS}c1/").status_code == 410
    events = AuditEvent.objects.filter(action="checkpoint.ttl").order_by("id")
    assert [e.details["ttl_seconds"] for e in events] == [3600, None, 1]


def test_it_pins_and_unpins(api: ApiClient, clock: Any) -> None:
    _save(api, "c1", ttl_seconds=60)
    pinned = api.post(f"{CPS}c1/ttl/", {"pinned": True})
    assert pinned.json()["pinned"] is True
    assert pinned.json()["expires_at"] == format_timestamp(T0 + timedelta(seconds=60))
    clock.move_to(T0 + timedelta(seconds=120))
    assert api.get(f"{CPS}c1/").status_code == 200
    # Unpinned, its passed expiry applies again at once.
    unpinned = api.post(f"{CPS}c1/ttl/", {"pinned": False})
    assert unpinned.status_code == 200
    assert unpinned.json()["pinned"] is False
    assert unpinned.json()["expired_at"] == format_timestamp(T0 + timedelta(seconds=60))
    assert api.get(f"{CPS}c1/").status_code == 410


def test_it_pins_and_sets_the_ttl_in_one_call(api: ApiClient, clock: Any) -> None:
    _save(api, "c1")
    both = api.post(f"{CPS}c1/ttl/", {"ttl_seconds": 10, "pinned": True}).json()
    assert both["pinned"] is True and both["expires_at"] == format_timestamp(T0 + timedelta(seconds=10))


def test_it_expires_now_into_a_tombstone(api: ApiClient, expiring: dict[str, Any], clock: Any) -> None:
    child = _save(api, "c3", parent_id="c2")
    clock.move_to(T0 + timedelta(seconds=10))

    response = api.delete(f"{CPS}c2/")

    assert response.status_code == 204
    assert response.content == b""
    row = Checkpoint.objects.get(checkpoint_id="c2")
    assert row.expired_at == T0 + timedelta(seconds=10)
    assert (row.state, row.context, row.metadata) == (None, None, None)
    assert row.checksum == expiring["checksum"] and row.parent_checkpoint_id == "c1"
    assert not PendingWrite.objects.filter(checkpoint_id="c2").exists()
    _gone(api.get(f"{CPS}c2/"), "c2", T0 + timedelta(seconds=10))
    # Lineage stays whole: the tombstone is still an ancestor, marked.
    lineage = api.get(f"{CPS}{child['checkpoint_id']}/lineage/").json()["results"]
    assert [(a["checkpoint_id"], a["expired_at"]) for a in lineage] == [
        ("c2", format_timestamp(T0 + timedelta(seconds=10))),
        ("c1", None),
    ]
    event = AuditEvent.objects.get(action="checkpoint.expire")
    assert event.target_id == "t1//c2"
    assert event.actor_label.startswith(f"key:{api.key.prefix}")
    assert event.details == {"namespace": "", "checkpoint_id": "c2"}
    # Expiring it again: it is already gone.
    assert api.delete(f"{CPS}c2/").status_code == 410


def test_it_refuses_to_expire_a_pinned_checkpoint(api: ApiClient, clock: Any) -> None:
    _save(api, "c1", pinned=True)
    response = api.delete(f"{CPS}c1/")
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "conflict",
        "message": "The checkpoint is pinned; unpin it before expiring it.",
        "details": {"pinned": True},
    }
    assert Checkpoint.objects.get(checkpoint_id="c1").expired_at is None
    assert not AuditEvent.objects.filter(action="checkpoint.expire").exists()


def test_it_gives_new_checkpoints_the_workspace_default_ttl(
    api: ApiClient, workspace: Workspace, clock: Any
) -> None:
    Workspace.objects.filter(pk=workspace.pk).update(default_ttl_seconds=30)
    default = _save(api, "c1")
    explicit = _save(api, "c2", ttl_seconds=5)
    never = _save(api, "c3", ttl_seconds=None)
    assert default["expires_at"] == format_timestamp(T0 + timedelta(seconds=30))
    assert explicit["expires_at"] == format_timestamp(T0 + timedelta(seconds=5))
    assert never["expires_at"] is None
