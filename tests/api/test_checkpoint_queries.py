"""Query counts of the checkpoint hot paths, pinned. Each count is written out query by query: a new query on
these paths must be a decision, not an accident. Counts hold for any page size (no N+1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import USING_POSTGRES, ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"
AUTH = (
    0  # the key and its workspace are remembered once used (warmed up below; tests/api/test_api_key_cache.py)
)
# Insert the checkpoint and touch its thread: one statement on PostgreSQL (data-modifying CTE), two on SQLite.
INSERT = 1 if USING_POSTGRES else 2
# Inside a test's transaction a save takes its locking path: SAVEPOINT + RELEASE, and statement 1 locks the
# thread. Outside any transaction on PostgreSQL (production) it is the same two statements with no
# transaction around them, pinned in tests/concurrency/test_optimistic_save.py.
ATOMIC = 2


@pytest.fixture
def warm(api: ApiClient) -> ApiClient:
    """A client whose key was used a moment ago (so authentication reads nothing)."""
    api.get("/api/v1/checkpoints/")
    return api


@pytest.fixture
def history(warm: ApiClient) -> None:
    """25 checkpoints in two namespaces of t1, plus other threads, with payloads."""
    for n in range(20):
        make_checkpoint(warm.workspace, "t1", state={"n": n}, metadata={"n": n})
    for n in range(5):
        make_checkpoint(warm.workspace, "t1", namespace="sub", state={"n": n})
    for n in range(5):
        make_checkpoint(warm.workspace, f"other-{n}", state={"n": n})


def test_it_saves_into_an_existing_thread_in_2_queries(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    # lock the thread and read its head (the parent default); insert and touch the thread
    with django_assert_num_queries(AUTH + ATOMIC + 1 + INSERT):
        response = warm.post(CPS, {"agent_id": "a", "state": {"n": 1}})
    assert response.status_code == 201


def test_it_saves_with_an_explicit_parent_without_looking_up_the_head(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    parent = make_checkpoint(warm.workspace, "t1", checkpoint_id="p")
    # lock, with the id's existing row (none) and the named parent's step; insert and touch
    with django_assert_num_queries(AUTH + ATOMIC + 1 + INSERT):
        response = warm.post(
            CPS, {"checkpoint_id": "c", "parent_id": parent.checkpoint_id, "agent_id": "a", "state": {}}
        )
    assert response.status_code == 201
    assert response.json()["parent_id"] == "p"


def test_it_saves_into_a_new_thread_in_4_queries(
    warm: ApiClient, django_assert_num_queries: Callable[..., Any]
) -> None:
    # lock (miss); insert the thread, ignoring a concurrent creator; lock it with its head; insert and touch
    with django_assert_num_queries(AUTH + ATOMIC + 3 + INSERT):
        response = warm.post("/api/v1/threads/fresh/checkpoints/", {"agent_id": "a", "state": {}})
    assert response.status_code == 201


def test_it_answers_an_idempotent_retry_in_2_queries(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    body = {"checkpoint_id": "c-retry", "agent_id": "a", "state": {"n": 1}}
    assert warm.post(CPS, body).status_code == 201
    # lock the thread, finding the id taken; the stored row to compare with (a retry is rare: the query
    # that locks only says whether the id is taken, and a new save skips loading anything)
    with django_assert_num_queries(AUTH + ATOMIC + 2):
        response = warm.post(CPS, body)
    assert response.status_code == 200


LARGE = {"messages": [{"role": "user", "content": f"{n} " + "word " * 60} for n in range(40)]}
# Its parts: stored within the insert's statement on PostgreSQL, by one more (executemany) on SQLite.
PARTS = 0 if USING_POSTGRES else 1


def test_it_saves_a_packed_state_in_as_many_queries_as_a_small_one(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    with django_assert_num_queries(AUTH + ATOMIC + 1 + PARTS + INSERT):
        response = warm.post(CPS, {"agent_id": "a", "state": LARGE})
    assert response.status_code == 201


def test_it_restores_a_packed_state_in_the_same_query_on_postgres(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    checkpoint = make_checkpoint(warm.workspace, "t1", checkpoint_id="c-large", state=LARGE)
    # PostgreSQL: the parts come in the restore's own statement; SQLite reads them next (in-process).
    with django_assert_num_queries(AUTH + 1 + PARTS):
        response = warm.get(f"{CPS}{checkpoint.checkpoint_id}/")
    assert response.status_code == 200 and response.json()["state"] == LARGE
    make_checkpoint(warm.workspace, "t1", state=LARGE)
    # A page of packed checkpoints comes with their parts too (SQLite: every one's in one more query).
    with django_assert_num_queries(AUTH + 2 + PARTS):
        page = warm.get(f"{CPS}?include_state=true&limit=3").json()["results"]
    assert [c["state"] for c in page[:2]] == [LARGE, LARGE]


def test_it_restores_in_1_query(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    checkpoint = make_checkpoint(warm.workspace, "t1", checkpoint_id="c-restore")
    with django_assert_num_queries(AUTH + 1):
        response = warm.get(f"{CPS}{checkpoint.checkpoint_id}/")
    assert response.status_code == 200
    with django_assert_num_queries(AUTH + 1):
        assert warm.get(f"/api/v1/checkpoints/{checkpoint.checkpoint_id}/").status_code == 200


# A timeline page and the queries it takes: a thread's, the thread and the page; the workspace's, the page
# alone. Whether the page holds checkpoints: a thread's always does here; a workspace filter may match none.
TIMELINE_PAGES: list[tuple[str, int, bool]] = [
    *[
        (f"{CPS}{query}", 2, True)
        for query in ["", "?include_state=true", "?namespace=&limit=7", "?metadata=%7B%22n%22%3A3%7D"]
    ],
    *[
        (f"/api/v1/checkpoints/{query}", 1, False)
        for query in ["", "?include_state=true", "?handoff_target=b", "?agent_id=agent-1&thread_id=t1"]
    ],
]


@pytest.mark.parametrize(("url", "queries", "filled"), TIMELINE_PAGES)
def test_it_lists_a_timeline_page_in_fixed_queries(
    warm: ApiClient,
    history: None,
    django_assert_num_queries: Callable[..., Any],
    url: str,
    queries: int,
    filled: bool,
) -> None:
    with django_assert_num_queries(AUTH + queries):
        response = warm.get(url)
    assert response.status_code == 200
    if filled:
        assert response.json()["results"]


def test_it_lists_the_next_timeline_page_in_2_queries(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    next_url = warm.get(CPS, {"limit": 10}).json()["next"]
    with django_assert_num_queries(AUTH + 2):
        response = warm.get(next_url)
    assert len(response.json()["results"]) == 10


def test_it_pages_before_an_anchor_in_3_queries(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    anchor = make_checkpoint(warm.workspace, "t1", checkpoint_id="anchor")
    make_checkpoint(warm.workspace, "t1")
    # the thread; the anchor; the page
    with django_assert_num_queries(AUTH + 3):
        response = warm.get(CPS, {"before": anchor.checkpoint_id, "namespace": ""})
    assert response.json()["results"][0]["step_index"] == anchor.step_index - 1


def test_it_reads_the_state_in_2_queries_on_a_cache_miss_and_1_on_a_hit(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    # the thread (its state_version names the cache entry); the head
    with django_assert_num_queries(AUTH + 2):
        miss = warm.get("/api/v1/threads/t1/state/")
    with django_assert_num_queries(AUTH + 1):
        hit = warm.get("/api/v1/threads/t1/state/")
    assert miss.status_code == hit.status_code == 200
    assert miss.content == hit.content


def test_a_save_leaves_the_cache_alone_and_the_first_read_fills_it(
    warm: ApiClient,
    history: None,
    django_assert_num_queries: Callable[..., Any],
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    # A save costs no cache write (docs/performance.md); the first read of its head reads the head from
    # the database and caches it once its response is sent; the next read is the thread row alone.
    with django_capture_on_commit_callbacks(execute=True):
        saved = warm.put("/api/v1/threads/t1/state/", {"agent_id": "a", "state": {"fresh": True}}).json()
    with django_assert_num_queries(AUTH + 2):
        first = warm.get("/api/v1/threads/t1/state/")
    with django_assert_num_queries(AUTH + 1):
        second = warm.get("/api/v1/threads/t1/state/")
    assert first.json()["checkpoint_id"] == second.json()["checkpoint_id"] == saved["checkpoint_id"]
    assert first.content == second.content
    assert second.json()["state"] == {"fresh": True}


def test_it_walks_the_lineage_in_3_queries(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    head = make_checkpoint(warm.workspace, "t1")
    # the checkpoint; the recursive walk; the ancestors
    with django_assert_num_queries(AUTH + 3):
        response = warm.get(f"{CPS}{head.checkpoint_id}/lineage/", {"limit": 10})
    assert len(response.json()["results"]) == 10


def test_it_diffs_in_2_queries(
    warm: ApiClient, history: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    head = make_checkpoint(warm.workspace, "t1", state={"n": "head"})
    with django_assert_num_queries(AUTH + 2):
        response = warm.get(f"{CPS}{head.checkpoint_id}/diff/")
    assert response.status_code == 200
