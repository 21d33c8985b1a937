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
