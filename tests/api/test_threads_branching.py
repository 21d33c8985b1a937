"""Fork, copy, prune and storage over the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from checkpoints.models import AuditEvent, Checkpoint, Message, PendingWrite, Thread
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire
from checkpoints.services.messages import messages_append
from tests.conftest import ApiClient
from tests.factories import make_checkpoint, make_pending_write

pytestmark = pytest.mark.django_db

THREADS = "/api/v1/threads/"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def say(api: ApiClient, thread_id: str, *contents: str) -> None:
    messages = [{"message_id": f"{thread_id}-{c}", "role": "user", "content": c} for c in contents]
    assert api.post(f"{THREADS}{thread_id}/messages/", {"messages": messages}).status_code == 201


def write(api: ApiClient, thread_id: str, checkpoint: Checkpoint, channel: str, value: Any) -> None:
    assert checkpoint.thread.thread_id == thread_id
    make_pending_write(checkpoint, value, channel=channel)


def snapshot(thread_id: str) -> dict[str, Any]:
    """Every stored row under a thread, to prove an operation left it untouched."""
    thread = Thread.objects.get(thread_id=thread_id)
    return {
        "thread": Thread.objects.filter(pk=thread.pk).values().get(),
        "checkpoints": list(Checkpoint.objects.filter(thread=thread).order_by("id").values()),
        "writes": list(PendingWrite.objects.filter(thread=thread).order_by("id").values()),
        "messages": list(Message.objects.filter(thread=thread).order_by("id").values()),
    }


@pytest.fixture
def source(api: ApiClient) -> dict[str, Checkpoint]:
    """Thread `src`: 2 messages, checkpoint c1, 2 more messages, checkpoint c2 (head), 1 more message."""
    workspace = api.workspace
    api.post(
        THREADS, {"thread_id": "src", "user_id": "alice", "name": "Source", "tags": ["t"], "ttl_seconds": 600}
    )
    with time_machine.travel(T0, tick=False):
        say(api, "src", "m1", "m2")
        c1 = make_checkpoint(workspace, "src", checkpoint_id="c1", state={"n": 1}, metadata={"k": "v"})
    with time_machine.travel(T0 + timedelta(seconds=1), tick=False):
        say(api, "src", "m3", "m4")
        c2 = make_checkpoint(workspace, "src", checkpoint_id="c2", state={"n": 2})
    write(api, "src", c1, "ch1", {"v": 1})
    write(api, "src", c2, "ch2", {"v": 2})
    say(api, "src", "m5")
    return {"c1": c1, "c2": c2}


def test_it_forks_from_the_head_copying_it_and_the_messages_up_to_its_message_seq(
    api: ApiClient, source: dict[str, Checkpoint]
) -> None:
    before = snapshot("src")
    response = api.post(f"{THREADS}src/fork/", {"thread_id": "branch", "name": "What if"})
    assert response.status_code == 201, response.json()
    assert response["Location"] == "/api/v1/threads/branch/"
    body = response.json()
    assert body["forked_from"] == {"thread_id": "src", "checkpoint_id": "c2", "namespace": ""}
    assert (body["name"], body["user_id"], body["tags"], body["ttl_seconds"]) == (
        "What if",
        "alice",
        ["t"],
        600,
    )
    assert body["head"] == "c2" and body["checkpoint_count"] == 1 and body["message_count"] == 4

    copy = api.get(f"{THREADS}branch/checkpoints/c2/")
    assert copy.status_code == 200 and copy["X-Checksum-Verified"] == "true"
    original = api.get(f"{THREADS}src/checkpoints/c2/").json()
    copied = copy.json()
    assert copied["parent_id"] is None and original["parent_id"] == "c1"
    assert copied["checksum"] != original["checksum"]  # the thread_id is part of the hashed record
    for field in ("state", "context", "metadata", "created_at", "step_index", "agent_id", "message_seq"):
        assert copied[field] == original[field], field
    assert copied["message_seq"] == 4

    messages = api.get(f"{THREADS}branch/messages/").json()["results"]
    assert [(m["message_id"], m["seq"]) for m in messages] == [(f"src-m{n}", n) for n in range(1, 5)]
    assert api.get(f"{THREADS}branch/state/").json()["checkpoint_id"] == "c2"
    writes = api.get(f"{THREADS}branch/checkpoints/c2/writes/").json()["results"]
    assert [(w["channel"], w["value"]) for w in writes] == [("ch2", {"v": 2})]

    # The fork continues on its own: its next message is seq 5, the source keeps its own m5.
    say(api, "branch", "x")
    assert [m["seq"] for m in api.get(f"{THREADS}branch/messages/").json()["results"]][-1] == 5
    assert snapshot("src") == before
    event = AuditEvent.objects.get(action="checkpoint.fork")
    assert event.target_id == "branch"
    assert event.details["source_thread_id"] == "src" and event.details["messages"] == 4


def test_it_forks_from_an_older_checkpoint_with_only_the_messages_it_had_seen(
    api: ApiClient, source: dict[str, Checkpoint]
) -> None:
    response = api.post(f"{THREADS}src/fork/", {"checkpoint_id": "c1"})
    assert response.status_code == 201, response.json()
    forked = response.json()
    assert len(forked["thread_id"]) == 36  # a UUIDv7
    assert forked["name"] == "Source" and forked["head"] == "c1" and forked["message_count"] == 2
    messages = api.get(f"{THREADS}{forked['thread_id']}/messages/").json()["results"]
    assert [m["content"] for m in messages] == ["m1", "m2"]
    writes = api.get(f"{THREADS}{forked['thread_id']}/checkpoints/c1/writes/").json()["results"]
    assert [w["channel"] for w in writes] == ["ch1"]


def test_it_forks_the_head_of_a_namespace(api: ApiClient, source: dict[str, Checkpoint]) -> None:
    make_checkpoint(api.workspace, "src", namespace="sub", checkpoint_id="s1", state={"sub": 1})
    body = api.post(f"{THREADS}src/fork/", {"namespace": "sub", "thread_id": "sub-branch"}).json()
    assert body["forked_from"] == {"thread_id": "src", "checkpoint_id": "s1", "namespace": "sub"}
    assert body["head"] is None  # the root namespace has no head in the fork
    assert api.get(f"{THREADS}sub-branch/state/", {"namespace": "sub"}).json()["state"] == {"sub": 1}


def test_it_keeps_the_remaining_ttl_on_the_forked_head(api: ApiClient, source: dict[str, Checkpoint]) -> None:
    with time_machine.travel(T0 + timedelta(seconds=2), tick=False):
        expiring = make_checkpoint(api.workspace, "src", checkpoint_id="c9", ttl_seconds=3600)
    with time_machine.travel(T0 + timedelta(minutes=30), tick=False):
        body = api.post(f"{THREADS}src/fork/", {"thread_id": "b"}).json()
    copied = Checkpoint.objects.get(thread__thread_id="b")
    assert body["head"] == "c9"
    assert copied.expires_at == expiring.expires_at


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"checkpoint_id": "missing"}, 404, "not_found"),
        ({"namespace": "empty-namespace"}, 404, "not_found"),
        ({"thread_id": "src"}, 409, "conflict"),
        ({"thread_id": "bad id"}, 400, "validation_error"),
        ({"checkpoint_id": 1}, 400, "validation_error"),
        ({"unknown": 1}, 400, "validation_error"),
    ],
)
def test_it_refuses_impossible_forks_and_creates_nothing(
    api: ApiClient, source: dict[str, Checkpoint], body: dict[str, Any], status: int, code: str
) -> None:
    threads = Thread.objects.count()
    response = api.post(f"{THREADS}src/fork/", body)
    assert response.status_code == status, response.json()
    assert response.json()["error"]["code"] == code
    assert Thread.objects.count() == threads


def test_it_refuses_to_fork_an_expired_checkpoint_with_410(
    api: ApiClient, source: dict[str, Checkpoint]
) -> None:
    checkpoint_expire(checkpoint=source["c1"], actor=Actor.system())
    response = api.post(f"{THREADS}src/fork/", {"checkpoint_id": "c1", "thread_id": "late"})
    assert response.status_code == 410
    assert not Thread.objects.filter(thread_id="late").exists()


def test_it_refuses_to_fork_or_copy_a_tampered_checkpoint(
    api: ApiClient, source: dict[str, Checkpoint]
) -> None:
    Checkpoint.objects.filter(pk=source["c2"].pk).update(state='{"n":666}')
    forked = api.post(f"{THREADS}src/fork/", {"thread_id": "laundered"})
    assert forked.status_code == 409 and forked.json()["error"]["code"] == "checksum_mismatch"
    copied = api.post(f"{THREADS}src/copy/", {"thread_id": "laundered"})
    assert copied.status_code == 409 and copied.json()["error"]["code"] == "checksum_mismatch"
    assert not Thread.objects.filter(thread_id="laundered").exists()
    assert not Checkpoint.objects.filter(thread__thread_id="laundered").exists()


def test_it_copies_a_whole_thread_preserving_ids_parents_order_tombstones_writes_and_messages(
    api: ApiClient, source: dict[str, Checkpoint]
) -> None:
    workspace = api.workspace
    make_checkpoint(workspace, "src", namespace="sub", checkpoint_id="s1", state={"s": 1})
    c3 = make_checkpoint(workspace, "src", checkpoint_id="c3", state={"n": 3})
    checkpoint_expire(checkpoint=c3, actor=Actor.system())
    before = snapshot("src")

    response = api.post(f"{THREADS}src/copy/", {"thread_id": "dup"})
    assert response.status_code == 201, response.json()
    assert response.json()["message_count"] == 5 and response.json()["forked_from"] is None

    def timeline(thread_id: str) -> list[tuple[Any, ...]]:
        return list(
            Checkpoint.objects.filter(thread__thread_id=thread_id)
            .order_by("id")
            .values_list(
                "checkpoint_id",
                "namespace",
                "parent_checkpoint_id",
                "step_index",
                "message_seq",
                "created_at",
                "expired_at",
                "state",
                "expires_at",
            )
        )

    assert timeline("dup") == timeline("src")
    listed = api.get(f"{THREADS}dup/checkpoints/", {"include_tombstones": "true"}).json()["results"]
    assert [c["checkpoint_id"] for c in listed] == ["c3", "s1", "c2", "c1"]
    for checkpoint_id, namespace in (("c1", ""), ("c2", ""), ("s1", "sub")):
        restored = api.get(f"{THREADS}dup/checkpoints/{checkpoint_id}/", {"namespace": namespace})
        assert restored["X-Checksum-Verified"] == "true", checkpoint_id
    assert api.get(f"{THREADS}dup/checkpoints/c3/").status_code == 410  # still a tombstone
    assert api.get(f"{THREADS}dup/state/").json()["checkpoint_id"] == "c2"

    def rows(model: Any, thread_id: str, *fields: str) -> list[tuple[Any, ...]]:
        return list(model.objects.filter(thread__thread_id=thread_id).order_by("id").values_list(*fields))

    message_fields = ("message_id", "seq", "role", "content", "created_at", "search_text", "size_bytes")
    assert rows(Message, "dup", *message_fields) == rows(Message, "src", *message_fields)
    write_fields = ("namespace", "checkpoint_id", "task_id", "idx", "channel", "value")
    assert rows(PendingWrite, "dup", *write_fields) == rows(PendingWrite, "src", *write_fields)
    say(api, "dup", "next")
    assert Message.objects.get(message_id="dup-next").seq == 6
    # The same checkpoint_id now exists in two threads.
    assert api.get("/api/v1/checkpoints/c1/").json()["error"]["code"] == "ambiguous_id"
    assert snapshot("src") == before
    event = AuditEvent.objects.get(action="thread.copy")
    assert event.details == {"source_thread_id": "src", "checkpoints": 4, "pending_writes": 2, "messages": 5}


def test_it_refuses_to_copy_onto_an_existing_thread(api: ApiClient, source: dict[str, Checkpoint]) -> None:
    api.post(THREADS, {"thread_id": "taken", "name": "mine"})
    response = api.post(f"{THREADS}src/copy/", {"thread_id": "taken"})
    assert response.status_code == 409
    assert not Checkpoint.objects.filter(thread__thread_id="taken").exists()
    assert api.post(f"{THREADS}src/copy/", {}).status_code == 400
    assert api.post(f"{THREADS}src/copy/", {"thread_id": None}).status_code == 400


def test_it_prunes_to_the_newest_readable_checkpoint_of_each_namespace(
    api: ApiClient, source: dict[str, Checkpoint]
) -> None:
    workspace = api.workspace
    s1 = make_checkpoint(workspace, "src", namespace="sub", checkpoint_id="s1", state={"s": 1})
    s2 = make_checkpoint(workspace, "src", namespace="sub", checkpoint_id="s2", state={"s": 2})
    write(api, "src", s1, "old", 1)
    write(api, "src", s2, "new", 2)
    with time_machine.travel(T0, tick=False):
        make_checkpoint(workspace, "src", checkpoint_id="c3", state={"n": 3}, ttl_seconds=60)
    # c3 is the newest but has expired (a minute after T0): the newest *readable* root checkpoint is c2.
    response = api.post(f"{THREADS}src/prune/", {"strategy": "keep_latest"})
    assert response.status_code == 200
    assert response.json() == {"pruned": 3}  # c1, c3 (expired), s1
    remaining = Checkpoint.objects.filter(thread__thread_id="src").order_by("id")
    assert [c.checkpoint_id for c in remaining] == ["c2", "s2"]
    writes = PendingWrite.objects.filter(thread__thread_id="src").order_by("id")
    assert [w.channel for w in writes] == ["ch2", "new"]
    assert Message.objects.filter(thread__thread_id="src").count() == 5
    event = AuditEvent.objects.get(action="thread.prune")
    assert event.details == {"strategy": "keep_latest", "checkpoints": 3, "pending_writes": 2}


def test_it_prunes_everything_with_the_delete_strategy(api: ApiClient, source: dict[str, Checkpoint]) -> None:
    response = api.post(f"{THREADS}src/prune/", {"strategy": "delete"})
    assert response.json() == {"pruned": 2}
    assert not Checkpoint.objects.filter(thread__thread_id="src").exists()
    assert not PendingWrite.objects.filter(thread__thread_id="src").exists()
    assert api.get(f"{THREADS}src/state/").status_code == 404
    assert api.get(f"{THREADS}src/").json()["head"] is None
    assert api.post(f"{THREADS}src/prune/", {"strategy": "delete"}).json() == {"pruned": 0}


@pytest.mark.parametrize("body", [{}, {"strategy": "all"}, {"strategy": 1}, {"strategy": "delete", "x": 1}])
def test_it_refuses_an_unknown_prune_strategy(
    api: ApiClient, source: dict[str, Checkpoint], body: Any
) -> None:
    assert api.post(f"{THREADS}src/prune/", body).status_code == 400
    assert Checkpoint.objects.filter(thread__thread_id="src").count() == 2


def test_it_reports_storage_by_namespace_and_kind(api: ApiClient) -> None:
    workspace = api.workspace
    root = make_checkpoint(workspace, "t", state={"a": "é"})  # {"a":"é"} = 10 bytes, + {} + {} = 14
    make_checkpoint(workspace, "t", namespace="sub", state=[1, 2])  # [1,2] + {} + {} = 9
    gone = make_checkpoint(workspace, "t", state={"gone": True})
    checkpoint_expire(checkpoint=gone, actor=Actor.system())
    write(api, "t", root, "c", "xyz")  # "xyz" = 5 bytes
    messages_append(workspace=workspace, thread_id="t", messages=[{"role": "user", "content": "héllo"}])
    response = api.get(f"{THREADS}t/storage/")
    assert response.status_code == 200
    assert response.json() == {
        "thread_id": "t",
        "namespaces": [
            {
                "namespace": "",
                "checkpoints": 1,
                "tombstones": 1,
                "pending_writes": 1,
                "state_bytes": 14,
                "writes_bytes": 5,
            },
            {
                "namespace": "sub",
                "checkpoints": 1,
                "tombstones": 0,
                "pending_writes": 0,
                "state_bytes": 9,
                "writes_bytes": 0,
            },
        ],
        "messages": {"count": 1, "bytes": 8},  # "héllo" (6) + metadata {} (2)
        "parts": {"count": 0, "bytes": 0},  # small documents are stored whole
        "totals": {
            "state_bytes": 23,
            "writes_bytes": 5,
            "messages_bytes": 8,
            "bytes": 36,
            "state_stored_bytes": 23,
            "stored_bytes": 36,
        },
    }
    detail = api.get(f"{THREADS}t/").json()
    assert (detail["storage_bytes"], detail["storage"]) == (36, {"logical_bytes": 36, "stored_bytes": 36})


def test_it_keeps_branching_inside_the_workspace(
    api: ApiClient, other_api: ApiClient, source: dict[str, Checkpoint]
) -> None:
    make_checkpoint(other_api.workspace, "theirs", checkpoint_id="their-cp")
    # Another workspace's checkpoint id is as unknown here as a missing one.
    assert api.post(f"{THREADS}src/fork/", {"checkpoint_id": "their-cp"}).status_code == 404
    # Thread ids are per workspace: copying onto an id used in another workspace is fine and leaves it be.
    assert api.post(f"{THREADS}src/copy/", {"thread_id": "theirs"}).status_code == 201
    assert other_api.get(f"{THREADS}theirs/state/").json()["checkpoint_id"] == "their-cp"
    assert api.get(f"{THREADS}theirs/state/").json()["checkpoint_id"] == "c2"
