"""Lineage: ancestors up to the root, nearest first, tombstones included and marked, paged by `next`."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.models import Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"


@pytest.fixture
def chain(workspace: Workspace) -> list[str]:
    """c0 <- c1 <- ... <- c9 in the root namespace, and a branch c3 <- b4 <- b5."""
    for n in range(10):
        make_checkpoint(workspace, "t1", checkpoint_id=f"c{n}")
    make_checkpoint(workspace, "t1", checkpoint_id="b4", parent_id="c3")
    make_checkpoint(workspace, "t1", checkpoint_id="b5", parent_id="b4")
    return [f"c{n}" for n in range(10)]


def _ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [a["checkpoint_id"] for a in response.json()["results"]]


def test_it_lists_ancestors_nearest_first(api: ApiClient, chain: list[str]) -> None:
    response = api.get(f"{CPS}c9/lineage/")
    assert _ids(response) == ["c8", "c7", "c6", "c5", "c4", "c3", "c2", "c1", "c0"]
    assert response.json()["next"] is None and response.json()["previous"] is None
    assert [a["step_index"] for a in response.json()["results"]] == list(range(8, -1, -1))
    assert "state" not in response.json()["results"][0]


def test_it_follows_the_branch_of_the_checkpoint(api: ApiClient, chain: list[str]) -> None:
    assert _ids(api.get(f"{CPS}b5/lineage/")) == ["b4", "c3", "c2", "c1", "c0"]


def test_it_has_no_ancestors_at_the_root(api: ApiClient, chain: list[str]) -> None:
    response = api.get(f"{CPS}c0/lineage/")
    assert response.json() == {"results": [], "next": None, "previous": None}


def test_it_pages_with_next_links_until_the_root(api: ApiClient, chain: list[str]) -> None:
    pages: list[list[str]] = []
    url: str | None = f"{CPS}c9/lineage/?limit=4"
    while url:
        response = api.get(url)
        pages.append(_ids(response))
        url = response.json()["next"]
    assert pages == [["c8", "c7", "c6", "c5"], ["c4", "c3", "c2", "c1"], ["c0"]]


def test_it_stops_exactly_at_the_root_when_the_limit_fits(api: ApiClient, chain: list[str]) -> None:
    response = api.get(f"{CPS}c9/lineage/", {"limit": 9})
    assert len(_ids(response)) == 9
    assert response.json()["next"] is None


def test_it_includes_tombstones_marked_with_expired_at(
    api: ApiClient, chain: list[str], workspace: Workspace
) -> None:
    from checkpoints.services.checkpoint_reads import checkpoint_get

    checkpoint_expire(
        checkpoint=checkpoint_get(workspace=workspace, thread_id="t1", checkpoint_id="c5"),
        actor=Actor.system(),
    )
    results = api.get(f"{CPS}c9/lineage/").json()["results"]
    marked = {a["checkpoint_id"]: a["expired_at"] for a in results}
    assert list(marked) == ["c8", "c7", "c6", "c5", "c4", "c3", "c2", "c1", "c0"]
    assert marked["c5"] is not None
    assert [k for k, v in marked.items() if v is not None] == ["c5"]
    # A tombstone's own lineage is readable too: lineage outlives payloads.
    assert _ids(api.get(f"{CPS}c5/lineage/")) == ["c4", "c3", "c2", "c1", "c0"]


def test_it_stays_within_the_namespace(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="x", namespace="a")
    make_checkpoint(workspace, "t1", checkpoint_id="x", namespace="b")
    make_checkpoint(workspace, "t1", checkpoint_id="y", namespace="b", parent_id="x")
    response = api.get(f"{CPS}y/lineage/", {"namespace": "b"})
    assert [(a["checkpoint_id"], a["namespace"]) for a in response.json()["results"]] == [("x", "b")]
    ambiguous = api.get(f"{CPS}x/lineage/")
    assert ambiguous.status_code == 409
    assert ambiguous.json()["error"]["code"] == "ambiguous_id"
