"""Who wrote it: every checkpoint records the API key (or dashboard user) that wrote it, answers it as
`written_by`, and the timelines filter by it. Provenance, not content: outside the checksum, and an
idempotent retry by another key keeps the first writer."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checkpoints.integrity import record_checksum
from checkpoints.models import Checkpoint, Workspace
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"


def _writer(client: ApiClient) -> str:
    return f"key:{client.key.prefix}"


def test_a_save_records_the_key_that_wrote_it_outside_the_checksum(api: ApiClient) -> None:
    saved = api.post(CPS, {"checkpoint_id": "c1", "agent_id": "a", "state": {"n": 1}})

    assert saved.status_code == 201, saved.content
    assert saved.json()["written_by"] == _writer(api)
    restored = api.get(f"{CPS}c1/").json()
    assert restored["written_by"] == _writer(api)
    assert record_checksum(restored) == restored["checksum"]
    assert Checkpoint.objects.get(checkpoint_id="c1").written_by == _writer(api)


def test_every_api_write_path_records_its_key(api: ApiClient) -> None:
    api.post(CPS, {"checkpoint_id": "c1", "agent_id": "a", "state": {}})
    put = api.put("/api/v1/threads/t1/state/", {"checkpoint_id": "c2", "agent_id": "a", "state": {}})
    handed = api.post(f"{CPS}c2/handoff/", {"target_agent_id": "b"})
    langgraph = api.post(
        "/api/v1/langgraph/threads/t2/checkpoints/",
        {"checkpoint_id": "g1", "agent_id": "graph", "state": {"channel_values": {}}},
    )

    for response in (put, handed, langgraph):
        assert response.status_code == 201, response.content
        assert response.json()["written_by"] == _writer(api)


def test_a_retry_by_another_key_keeps_the_first_writer(
    api: ApiClient, make_client: Callable[..., ApiClient], workspace: Workspace
) -> None:
    body = {"checkpoint_id": "c1", "agent_id": "a", "state": {"n": 1}}
    api.post(CPS, body)
    other = make_client(workspace)

    retried = other.post(CPS, body)

    assert retried.status_code == 200, retried.content
    assert retried.json()["written_by"] == _writer(api) != _writer(other)


def test_the_timelines_filter_by_writer(
    api: ApiClient, make_client: Callable[..., ApiClient], workspace: Workspace
) -> None:
    other = make_client(workspace)
    api.post(CPS, {"checkpoint_id": "mine", "agent_id": "a", "state": {}})
    other.post(CPS, {"checkpoint_id": "theirs", "agent_id": "a", "state": {}})
    make_checkpoint(workspace, "t1", checkpoint_id="unrecorded")

    thread = api.get(CPS, {"written_by": _writer(other)}).json()["results"]
    everywhere = api.get("/api/v1/checkpoints/", {"written_by": _writer(api)}).json()["results"]
    unrecorded = api.get(CPS, {"written_by": ""}).json()["results"]

    assert [c["checkpoint_id"] for c in thread] == ["theirs"]
    assert [c["checkpoint_id"] for c in everywhere] == ["mine"]
    assert {c["checkpoint_id"] for c in unrecorded} == {"mine", "theirs", "unrecorded"}  # empty: no filter
    assert {c["written_by"] for c in unrecorded} == {_writer(api), _writer(other), ""}
