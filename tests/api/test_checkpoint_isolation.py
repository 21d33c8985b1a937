"""Tenant isolation on every checkpoint endpoint, generated from the URL patterns: another workspace's ids
are 404 (never 403), with a body identical to that of an id that exists nowhere; writes under the same ids
land in the caller's own workspace and never touch the other one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.urls import URLPattern, reverse

from checkpoints.api import urls as api_urls
from checkpoints.models import ApiKey, Checkpoint, PendingWrite, Thread
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_handoff
from tests.api.errors import assert_not_found
from tests.conftest import ApiClient
from tests.factories import WorkspaceFactory, make_checkpoint, make_pending_write

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")
IDS = {"thread_id": "t-a", "checkpoint_id": "c-2"}

# Valid bodies, so that what decides the answer is the id, not the body.
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("thread-checkpoints", "post"): {"agent_id": "b", "state": {"mine": True}},
    ("thread-state", "put"): {"agent_id": "b", "state": {"mine": True}},
    ("checkpoint-ttl", "post"): {"ttl_seconds": 60},
    ("checkpoint-handoff", "post"): {"target_agent_id": "b"},
    ("checkpoint-writes", "post"): {"task_id": "task", "writes": [{"channel": "c", "value": 1}]},
    ("langgraph-checkpoint-save", "post"): {"agent_id": "b", "state": {"mine": True}},
}
# Writes that create under the caller's own workspace (thread ids are per workspace): not a 404.
CREATES_IN_OWN_WORKSPACE = {
    ("thread-checkpoints", "post"),
    ("thread-state", "put"),
    ("checkpoint-writes", "post"),
    ("langgraph-checkpoint-save", "post"),
}
# Lists filtered by another workspace's ids: empty, not 404.
FILTER_QUERIES: dict[str, dict[str, str]] = {
    "checkpoints": {"thread_id": "t-a", "handoff_target": "agent-b"},
    "langgraph-checkpoints": {"thread_id": "t-a", "checkpoint_id": "c-2"},
}


def checkpoint_routes() -> Iterator[URLPattern]:
    """Every route of the API that serves checkpoints (so a new one is covered without editing this file)."""
    for pattern in api_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        if "checkpoints/" in str(pattern.pattern) or pattern.name == "thread-state":
            yield pattern


def cases() -> list[tuple[str, str]]:
    found = []
    for pattern in checkpoint_routes():
        view_class = pattern.callback.view_class  # type: ignore[attr-defined]
        found += [(str(pattern.name), m) for m in METHODS if hasattr(view_class, m)]
    return found


def test_it_generates_cases_for_every_checkpoint_route() -> None:
    names = {name for name, _ in cases()}
    assert {
        "thread-state",
        "thread-checkpoints",
        "checkpoint-detail",
        "checkpoint-ttl",
        "checkpoint-handoff",
        "checkpoint-diff",
        "checkpoint-lineage",
        "checkpoint-writes",
        "checkpoints",
        "checkpoint-by-id",
    } <= names
    assert ("checkpoint-detail", "delete") in cases()


def _path(name: str, ids: dict[str, str]) -> str:
    pattern = next(p for p in checkpoint_routes() if p.name == name)
    kwargs = {key: ids[key] for key in pattern.pattern.converters}
    return reverse(f"api:{name}", kwargs=kwargs)


def _call(client: ApiClient, name: str, method: str, ids: dict[str, str]) -> Any:
    query = FILTER_QUERIES.get(name, {})
    body = BODIES.get((name, method))
    path = _path(name, ids)
    if method in ("get", "delete"):
        return getattr(client, method)(path, query)
    return getattr(client, method)(path, body or {})


def _snapshot_of(workspace: Any) -> list[tuple[Any, ...]]:
    """Everything another workspace could alter in `workspace`."""
    rows: list[tuple[Any, ...]] = list(
        Checkpoint.objects.filter(workspace=workspace)
        .order_by("id")
        .values_list("checkpoint_id", "checksum", "expires_at", "pinned", "expired_at", "state")
    )
    rows += list(
        Thread.objects.filter(workspace=workspace)
        .order_by("id")
        .values_list("thread_id", "state_version", "updated_at")
    )
    rows += list(
        PendingWrite.objects.filter(thread__workspace=workspace)
        .order_by("id")
        .values_list("checkpoint_id", "task_id", "idx", "value")
    )
    return rows


@pytest.fixture
def owner_data(api: ApiClient) -> None:
    """Workspace acme: thread t-a with c-1 <- c-2, a handoff of c-2 to agent-b, and a pending write."""
    make_checkpoint(api.workspace, "t-a", checkpoint_id="c-1", metadata={"secret": "acme"})
    c2 = make_checkpoint(api.workspace, "t-a", checkpoint_id="c-2", metadata={"secret": "acme"})
    c2.thread = Thread.objects.get(pk=c2.thread_id)
    checkpoint_handoff(source=c2, target_agent_id="agent-b", actor=Actor.system())
    make_pending_write(c2, "acme-secret")


@pytest.fixture
def stranger(make_client: Callable[..., ApiClient], other_api: ApiClient) -> ApiClient:
    """Workspace globex, which has data of its own (a thread, a checkpoint) but none of acme's."""
    make_checkpoint(other_api.workspace, "t-b", checkpoint_id="c-b")
    return other_api


@pytest.fixture
def nobody(make_client: Callable[..., ApiClient]) -> ApiClient:
    """A workspace with nothing at all: its answers are what "missing" looks like."""
    return make_client(WorkspaceFactory.create(slug="initech"), ApiKey.Scope.ADMIN)


@pytest.mark.parametrize(("name", "method"), cases())
def test_it_never_lets_another_workspace_reach_a_checkpoint(
    owner_data: None, api: ApiClient, stranger: ApiClient, nobody: ApiClient, name: str, method: str
) -> None:
    before = _snapshot_of(api.workspace)
    path_names = set(next(p for p in checkpoint_routes() if p.name == name).pattern.converters)

    response = _call(stranger, name, method, IDS)
    text = response.content.decode()

    assert response.status_code < 500, text
    assert response.status_code != 403, text
    # Nothing of acme's is ever in the body: not its data, not its checksums, not its pending writes.
    assert "acme" not in text
    for checkpoint in Checkpoint.objects.filter(workspace=api.workspace):
        assert checkpoint.checksum not in text
    if (name, method) in CREATES_IN_OWN_WORKSPACE:
        assert response.status_code in (200, 201, 400), text
        if response.status_code in (200, 201):
            assert Thread.objects.filter(workspace=stranger.workspace, thread_id="t-a").exists()
    elif "checkpoint_id" in path_names or "thread_id" in path_names:
        assert response.status_code == 404, text
        assert response.json()["error"]["code"] == "not_found"
        missing = _call(nobody, name, method, IDS)
        assert missing.status_code == 404
        assert response.content == missing.content
    else:
        assert response.status_code == 200, text
        assert response.json()["results"] == []
    assert _snapshot_of(api.workspace) == before


def test_it_refuses_another_workspaces_checkpoint_as_parent_like_a_missing_one(
    owner_data: None, stranger: ApiClient
) -> None:
    url = "/api/v1/threads/t-a/checkpoints/"
    foreign = stranger.post(url, {"agent_id": "b", "state": {}, "parent_id": "c-2"})
    missing = stranger.post(url, {"agent_id": "b", "state": {}, "parent_id": "c-nowhere"})
    assert foreign.status_code == missing.status_code == 400
    assert foreign.json()["error"]["details"]["fields"] == {
        "parent_id": ["No checkpoint 'c-2' in namespace '' of this thread."]
    }
    assert list(missing.json()["error"]["details"]["fields"]) == ["parent_id"]
    assert not Thread.objects.filter(workspace=stranger.workspace, thread_id="t-a").exists()


def test_it_gives_another_workspaces_head_no_meaning_in_if_match(
    owner_data: None, stranger: ApiClient
) -> None:
    head = Checkpoint.objects.filter(thread__thread_id="t-a").order_by("-id").first()
    assert head is not None
    response = stranger.put(
        "/api/v1/threads/t-a/state/", {"agent_id": "b", "state": {}}, HTTP_IF_MATCH=f'"{head.checkpoint_id}"'
    )
    assert response.status_code == 412
    assert response.json()["error"]["details"]["head"] is None


def test_it_does_not_diff_against_another_workspaces_checkpoint(
    owner_data: None, stranger: ApiClient
) -> None:
    response = stranger.get(
        "/api/v1/threads/t-b/checkpoints/c-b/diff/", {"against": "c-2", "against_thread_id": "t-a"}
    )
    assert_not_found(response, "Checkpoint 'c-2' not found.")


def test_it_does_not_page_past_another_workspaces_checkpoint(owner_data: None, stranger: ApiClient) -> None:
    response = stranger.get("/api/v1/threads/t-b/checkpoints/", {"before": "c-2"})
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"] == {"before": ["No such checkpoint."]}
