"""`?user_id=` on the thread state endpoint: one end user never reads or writes another's state."""

from __future__ import annotations

import pytest

from checkpoints.models import Checkpoint, Thread
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

STATE = "/api/v1/threads/t1/state/"
BODY = {"agent_id": "a", "state": {"n": 1}}


def test_it_creates_the_thread_for_the_user_and_serves_it_only_to_that_user(api: ApiClient) -> None:
    assert api.put(f"{STATE}?user_id=alice", BODY).status_code == 201
    assert Thread.objects.get(thread_id="t1").user_id == "alice"
    mine = api.get(f"{STATE}?user_id=alice")
    assert mine.status_code == 200 and mine.json()["state"] == {"n": 1}
    theirs = api.get(f"{STATE}?user_id=bob")
    assert theirs.status_code == 404
    assert theirs.json()["error"]["code"] == "not_found"


def test_it_refuses_a_write_into_another_users_thread_and_stores_nothing(api: ApiClient) -> None:
    api.put(f"{STATE}?user_id=alice", BODY)
    response = api.put(f"{STATE}?user_id=bob", {"agent_id": "a", "state": {"n": 2}})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert list(Checkpoint.objects.values_list("state", flat=True)) == ['{"n":1}']


def test_it_keeps_serving_every_caller_without_user_id(api: ApiClient) -> None:
    api.put(f"{STATE}?user_id=alice", BODY)
    assert api.get(STATE).json()["state"] == {"n": 1}


def test_it_refuses_an_overlong_user_id(api: ApiClient) -> None:
    response = api.get(f"{STATE}?user_id={'u' * 256}")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"] == {"user_id": ["Too long."]}


CHECKPOINTS = "/api/v1/threads/t1/checkpoints/"


def test_every_checkpoint_endpoint_of_another_users_thread_is_a_404(api: ApiClient) -> None:
    saved = api.post(f"{CHECKPOINTS}?user_id=alice", BODY).json()
    one = f"{CHECKPOINTS}{saved['checkpoint_id']}/"
    requests = [
        ("get", CHECKPOINTS, None),
        ("post", CHECKPOINTS, BODY),
        ("get", one, None),
        ("delete", one, None),
        ("post", f"{one}ttl/", {"pinned": True}),
        ("post", f"{one}handoff/", {"target_agent_id": "b"}),
        ("get", f"{one}diff/", None),
        ("get", f"{one}lineage/", None),
        ("get", f"{one}writes/", None),
        ("post", f"{one}writes/", {"task_id": "t", "writes": [{"channel": "c", "value": 1}]}),
    ]
    for method, url, body in requests:
        response = (
            getattr(api, method)(f"{url}?user_id=bob", body)
            if body
            else getattr(api, method)(f"{url}?user_id=bob")
        )
        assert (method, url, response.status_code) == (method, url, 404)
        assert response.json()["error"]["code"] == "not_found"
    # Nothing changed for alice: one live checkpoint, unpinned, no writes, no handoff.
    assert list(Checkpoint.objects.values_list("pinned", "expired_at")) == [(False, None)]
    assert api.get(f"{one}?user_id=alice").status_code == 200


def test_a_user_scoped_save_creates_the_thread_for_that_user(api: ApiClient) -> None:
    assert api.post(f"{CHECKPOINTS}?user_id=carol", BODY).status_code == 201
    assert Thread.objects.get(thread_id="t1").user_id == "carol"
    assert len(api.get(f"{CHECKPOINTS}?user_id=carol").json()["results"]) == 1


def _two_users(api: ApiClient) -> None:
    """Alice's thread t-a (checkpoint "mine") and Bob's thread t-b (checkpoint "secret")."""
    for thread, user, checkpoint_id, state in (
        ("t-a", "alice", "mine", {"guess": "hunter2"}),
        ("t-b", "bob", "secret", {"password": "hunter2", "card": "4111"}),
    ):
        body = {"checkpoint_id": checkpoint_id, "agent_id": "a", "state": state}
        assert api.post(f"/api/v1/threads/{thread}/checkpoints/?user_id={user}", body).status_code == 201


MINE_DIFF = "/api/v1/threads/t-a/checkpoints/mine/diff/"


def test_a_diff_against_another_users_thread_is_a_404_like_a_missing_one(api: ApiClient) -> None:
    _two_users(api)
    theirs = api.get(MINE_DIFF, {"user_id": "alice", "against": "secret", "against_thread_id": "t-b"})
    missing = api.get(MINE_DIFF, {"user_id": "alice", "against": "secret", "against_thread_id": "t-none"})
    assert theirs.status_code == missing.status_code == 404
    # Byte for byte what a missing thread answers: nothing tells that bob's checkpoint exists.
    assert theirs.content == missing.content
    assert theirs.json()["error"] == {
        "code": "not_found",
        "message": "Checkpoint 'secret' not found.",
        "details": {},
    }
    # No user scope among threads without a user either (`user_id=` means "no user").
    unowned = api.get(MINE_DIFF, {"user_id": "", "against": "mine", "against_thread_id": "t-b"})
    assert unowned.status_code == 404


def test_a_diff_across_threads_of_the_same_user_or_unscoped_still_works(api: ApiClient) -> None:
    _two_users(api)
    body = {"checkpoint_id": "other", "agent_id": "a", "state": {"guess": "swordfish"}}
    api.post("/api/v1/threads/t-a2/checkpoints/?user_id=alice", body)
    own = api.get(MINE_DIFF, {"user_id": "alice", "against": "other", "against_thread_id": "t-a2"})
    assert own.status_code == 200
    assert own.json()["against_thread_id"] == "t-a2"
    assert {"op": "replace", "path": "/state/guess", "value": "hunter2"} in own.json()["patch"]
    # Without user_id the key's workspace is the only boundary, as everywhere else.
    unscoped = api.get(MINE_DIFF, {"against": "secret", "against_thread_id": "t-b"})
    assert unscoped.status_code == 200
    assert unscoped.json()["against_thread_id"] == "t-b"


def test_a_fork_or_copy_never_reads_another_users_thread(api: ApiClient) -> None:
    _two_users(api)
    # The checkpoint to fork from is looked up in the (scoped) source thread only.
    named = api.post("/api/v1/threads/t-a/fork/?user_id=alice", {"checkpoint_id": "secret"})
    assert named.status_code == 404
    assert named.json()["error"]["message"] == "Checkpoint 'secret' not found."
    for action, body in (("fork", {}), ("copy", {"thread_id": "t-stolen"})):
        response = api.post(f"/api/v1/threads/t-b/{action}/?user_id=alice", body)
        assert (action, response.status_code) == (action, 404)
        assert response.json()["error"]["message"] == "Thread 't-b' not found."
    assert not Thread.objects.filter(thread_id="t-stolen").exists()
    assert Thread.objects.filter(user_id="alice").count() == 1


def test_lineage_and_handoff_stay_inside_the_scoped_thread(api: ApiClient) -> None:
    _two_users(api)
    lineage = api.get("/api/v1/threads/t-b/checkpoints/secret/lineage/?user_id=alice")
    handoff = api.post(
        "/api/v1/threads/t-b/checkpoints/secret/handoff/?user_id=alice", {"target_agent_id": "x"}
    )
    assert (lineage.status_code, handoff.status_code) == (404, 404)
    assert lineage.json()["error"]["message"] == handoff.json()["error"]["message"]
    assert Checkpoint.objects.filter(thread__thread_id="t-b").count() == 1
