"""`threads/{id}/state/`: the head through a never-stale cache, and saving a new head with If-Match."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection

from checkpoints.exceptions import PreconditionFailed
from checkpoints.models import Checkpoint, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoint_reads import checkpoint_get
from checkpoints.services.checkpoints import checkpoint_expire, checkpoint_save, checkpoint_set_ttl
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

STATE = "/api/v1/threads/t1/state/"


def _put(api: ApiClient, state: Any, if_match: str | None = None, url: str = STATE) -> Any:
    headers: dict[str, Any] = {"HTTP_IF_MATCH": if_match} if if_match is not None else {}
    return api.put(url, {"agent_id": "a", "state": state}, **headers)


def test_it_answers_404_without_a_thread_or_without_a_checkpoint(api: ApiClient) -> None:
    missing = api.get(STATE)
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "Thread 't1' not found."
    api.post(
        "/api/v1/threads/t1/checkpoints/c1/writes/",
        {"task_id": "t", "writes": [{"channel": "c", "value": 1}]},
    )
    empty = api.get(STATE)
    assert empty.status_code == 404
    assert empty.json()["error"]["message"] == "Thread 't1' has no checkpoint in namespace ''."


def test_it_serves_the_head_with_its_etag(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="c1", state={"n": 1})
    make_checkpoint(workspace, "t1", checkpoint_id="c2", state={"n": 2})
    make_checkpoint(workspace, "t1", checkpoint_id="s1", namespace="sub", state={"sub": True})
    head = api.get(STATE)
    assert head.status_code == 200
    assert (head.json()["checkpoint_id"], head.json()["state"]) == ("c2", {"n": 2})
    assert head["ETag"] == '"c2"' and head["X-Checksum-Verified"] == "true"
    assert api.get(STATE, {"namespace": "sub"}).json()["checkpoint_id"] == "s1"


def test_it_saves_a_new_head_whose_parent_is_the_head(api: ApiClient) -> None:
    first = _put(api, {"n": 1})
    second = _put(api, {"n": 2})
    assert (first.status_code, second.status_code) == (201, 201)
    assert second.json()["parent_id"] == first.json()["checkpoint_id"]
    assert second.json()["step_index"] == 1
    assert api.get(STATE).json()["checkpoint_id"] == second.json()["checkpoint_id"]


@pytest.mark.parametrize("spelling", ['"{id}"', "{id}", 'W/"{id}"', ' "{id}" '])
def test_it_saves_when_if_match_names_the_head(api: ApiClient, spelling: str) -> None:
    head = _put(api, {"n": 1}).json()
    response = _put(api, {"n": 2}, spelling.format(id=head["checkpoint_id"]))
    assert response.status_code == 201
    assert response.json()["parent_id"] == head["checkpoint_id"]


def test_it_answers_412_naming_the_head_when_if_match_is_stale(api: ApiClient) -> None:
    first = _put(api, {"n": 1}).json()
    second = _put(api, {"n": 2}).json()
    response = _put(api, {"n": 3}, f'"{first["checkpoint_id"]}"')
    assert response.status_code == 412
    assert response.json()["error"] == {
        "code": "precondition_failed",
        "message": "The head moved: it is not the checkpoint named in If-Match.",
        "details": {"expected": [first["checkpoint_id"]], "head": second["checkpoint_id"], "namespace": ""},
    }
    assert Checkpoint.objects.count() == 2


def test_it_saves_when_any_tag_of_an_if_match_list_is_the_head(api: ApiClient) -> None:
    first = _put(api, {"n": 1}).json()
    head = _put(api, {"n": 2}).json()
    listed = f'"{first["checkpoint_id"]}", W/"{head["checkpoint_id"]}"'
    response = _put(api, {"n": 3}, listed)
    assert response.status_code == 201, response.json()
    assert response.json()["parent_id"] == head["checkpoint_id"]
    stale = _put(api, {"n": 4}, f'"{first["checkpoint_id"]}", "{head["checkpoint_id"]}"')
    assert stale.status_code == 412
    assert stale.json()["error"]["details"]["expected"] == [first["checkpoint_id"], head["checkpoint_id"]]


def test_it_takes_star_as_any_head(api: ApiClient) -> None:
    on_empty = _put(api, {"n": 1}, "*")
    assert on_empty.status_code == 412
    assert on_empty.json()["error"]["details"]["head"] is None
    _put(api, {"n": 1})
    assert _put(api, {"n": 2}, "*").status_code == 201


def test_it_checks_if_match_per_namespace(api: ApiClient) -> None:
    root = _put(api, {"n": 1}).json()
    sub_url = f"{STATE}?namespace=sub"
    assert _put(api, {"n": 1}, f'"{root["checkpoint_id"]}"', url=sub_url).status_code == 412
    sub = _put(api, {"n": 1}, url=sub_url).json()
    assert sub["namespace"] == "sub" and sub["parent_id"] is None
    assert _put(api, {"n": 2}, f'"{sub["checkpoint_id"]}"', url=sub_url).status_code == 201


def test_it_round_trips_etag_into_if_match(api: ApiClient) -> None:
    _put(api, {"n": 1})
    etag = api.get(STATE)["ETag"]
    assert _put(api, {"n": 2}, etag).status_code == 201
    assert _put(api, {"n": 3}, etag).status_code == 412


def test_it_never_serves_a_stale_head_from_the_cache(
    api: ApiClient, workspace: Workspace, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        _put(api, {"n": 1})
        _put(api, {"n": 2})
    assert api.get(STATE).json()["state"] == {"n": 2}  # cached
    # Every head-moving write bumps the thread's state_version, so the cached entry is never read again.
    head = checkpoint_get(
        workspace=workspace, thread_id="t1", checkpoint_id=api.get(STATE).json()["checkpoint_id"]
    )
    checkpoint_expire(checkpoint=head, actor=Actor.system())
    assert api.get(STATE).json()["state"] == {"n": 1}
    with django_capture_on_commit_callbacks(execute=True):
        saved = checkpoint_save(workspace=workspace, thread_id="t1", agent_id="a", state={"n": 3}).checkpoint
    assert api.get(STATE).json()["state"] == {"n": 3}
    checkpoint_set_ttl(checkpoint=saved, actor=Actor.system(), ttl_seconds=1, pinned=False)
    assert api.get(STATE).json()["state"] == {"n": 3}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_it_lets_exactly_one_of_two_racing_writers_win(workspace: Workspace) -> None:
    head = make_checkpoint(workspace, "race", checkpoint_id="base")
    barrier = threading.Barrier(2)

    def write(n: int) -> str:
        try:
            barrier.wait(timeout=10)
            checkpoint_save(
                workspace=workspace,
                thread_id="race",
                agent_id=f"writer-{n}",
                state={"n": n},
                expected_head=(head.checkpoint_id,),
            )
            return "won"
        except PreconditionFailed:
            return "412"
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = sorted(pool.map(write, [1, 2]))

    assert outcomes == ["412", "won"]
    children = Checkpoint.objects.filter(thread__thread_id="race", parent_checkpoint_id="base")
    assert children.count() == 1
