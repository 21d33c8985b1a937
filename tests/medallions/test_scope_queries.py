"""Scope queries are complete at any size: 5,000+ medallions where the matches are the *oldest* rows (the
seed looked only at the newest 5 x limit rows and lost them). Every rule is checked through the API."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection

from checkpoints.medallion_schema import MedallionScope
from checkpoints.models import ApiKey, Medallion, Workspace
from checkpoints.services.medallion_reads import medallions_for_scope
from tests.conftest import ApiClient
from tests.medallions.fixtures import medallion_row

NOISE = 5_000
START = datetime(2025, 1, 1, tzinfo=UTC)

# The matches, oldest first: (label, graph_nodes, tags, status).
OLD_ROWS = [
    ("superset", ["repo:muse", "module:cli", "module:store"], ["project_state", "refactor"], "active"),
    ("exact", ["repo:muse", "module:cli"], ["refactor"], "active"),
    ("tags-only-overlap", ["repo:muse", "module:cli"], ["perf", "project_state"], "active"),
    ("subset-of-query", ["repo:muse"], ["refactor"], "active"),  # lacks module:cli
    ("no-tag-overlap", ["repo:muse", "module:cli"], ["docs"], "active"),
    ("stale", ["repo:muse", "module:cli"], ["refactor"], "stale"),
    ("other-repo", ["repo:other", "module:cli"], ["refactor"], "active"),
]


@pytest.fixture(scope="module")
def corpus(django_db_setup: Any, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """One workspace: the seven labelled rows first (oldest), then 5,000 newer near misses that share nodes or
    tags with the query but never both conditions. Committed once for the module, removed afterwards."""
    with django_db_blocker.unblock():
        workspace = Workspace.objects.create(slug="scope-corpus", name="Scope corpus")
        rows = [
            medallion_row(
                workspace,
                nodes,
                tags,
                status=status,
                updated_at=START + timedelta(minutes=i),
                high_level=label,
            )
            for i, (label, nodes, tags, status) in enumerate(OLD_ROWS)
        ]
        noise_start = START + timedelta(days=30)
        for i in range(NOISE):
            # Alternately: the nodes without an overlapping tag, or an overlapping tag without module:cli.
            nodes = ["repo:muse", "module:cli", f"file:{i}"] if i % 2 else ["repo:muse", f"module:n{i}"]
            tags = [f"noise-{i % 7}"] if i % 2 else ["refactor", f"noise-{i % 7}"]
            rows.append(
                medallion_row(
                    workspace,
                    nodes,
                    tags,
                    updated_at=noise_start + timedelta(seconds=i),
                    high_level=f"noise {i}",
                )
            )
        Medallion.objects.bulk_create(rows, batch_size=1000)
        labels = {
            m.high_level: m
            for m in Medallion.objects.filter(workspace=workspace, high_level__in=[r[0] for r in OLD_ROWS])
        }
        yield {"workspace": workspace, "labels": labels}
        workspace.delete()


@pytest.fixture
def corpus_api(corpus: dict[str, Any], make_client: Callable[..., ApiClient]) -> ApiClient:
    return make_client(corpus["workspace"], ApiKey.Scope.READ)


def labels_of(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [m["summary"]["high_level"] for m in response.json()["results"]]


@pytest.mark.django_db
def test_the_corpus_holds_more_than_5000_medallions(corpus: dict[str, Any]) -> None:
    assert Medallion.objects.filter(workspace=corpus["workspace"]).count() == NOISE + len(OLD_ROWS)


@pytest.mark.django_db
def test_it_finds_the_oldest_matches_behind_5000_newer_near_misses(corpus_api: ApiClient) -> None:
    response = corpus_api.get(
        "/api/v1/medallions/",
        {"graph_nodes": "repo:muse,module:cli", "tags": ["refactor", "project_state"], "limit": "10"},
    )
    # Superset of the nodes + any tag overlap; newest updated_at first; stale, subset and no-overlap excluded.
    assert labels_of(response) == ["tags-only-overlap", "exact", "superset"]
    assert response.json()["next"] is None


@pytest.mark.django_db
def test_stored_nodes_must_be_a_superset_of_the_requested_ones(corpus_api: ApiClient) -> None:
    found = labels_of(
        corpus_api.get("/api/v1/medallions/", {"graph_nodes": ["repo:muse", "module:cli", "module:store"]})
    )
    assert found == ["superset"]  # "exact" holds only two of the three nodes
    found = labels_of(
        corpus_api.get("/api/v1/medallions/", {"graph_nodes": ["module:store"], "limit": "500"})
    )
    assert found == ["superset"]


@pytest.mark.django_db
def test_any_tag_overlap_matches(corpus_api: ApiClient) -> None:
    found = labels_of(corpus_api.get("/api/v1/medallions/", {"tags": "perf,docs", "limit": "500"}))
    assert found == ["no-tag-overlap", "tags-only-overlap"]


@pytest.mark.django_db
def test_an_empty_side_imposes_no_condition_and_pagination_is_complete(corpus_api: ApiClient) -> None:
    # Only nodes: every active row holding repo:muse and module:cli, whatever its tags (2,500 noise rows too).
    seen: list[str] = []
    url: str | None = "/api/v1/medallions/?graph_nodes=module:cli&graph_nodes=repo:muse&limit=500"
    while url:
        response = corpus_api.get(url)
        seen.extend(labels_of(response))
        url = response.json()["next"]
    assert len(seen) == len(set(seen)) == NOISE // 2 + 4
    assert seen[-4:] == ["no-tag-overlap", "tags-only-overlap", "exact", "superset"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params",
    [{}, {"graph_nodes": ""}, {"tags": ",, ,"}, {"graph_nodes": " ", "tags": ""}, {"status": "active"}],
)
def test_an_empty_scope_is_a_400_never_everything(corpus_api: ApiClient, params: dict[str, str]) -> None:
    response = corpus_api.get("/api/v1/medallions/", params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert "empty scope" in response.json()["error"]["message"]


@pytest.mark.django_db
def test_the_status_filter_defaults_to_active(corpus_api: ApiClient) -> None:
    query = {"graph_nodes": "repo:muse,module:cli", "tags": "refactor"}
    assert labels_of(corpus_api.get("/api/v1/medallions/", query)) == ["exact", "superset"]
    assert labels_of(corpus_api.get("/api/v1/medallions/", {**query, "status": "stale"})) == ["stale"]
    assert labels_of(corpus_api.get("/api/v1/medallions/", {**query, "status": "any"})) == [
        "stale",
        "exact",
        "superset",
    ]
    bad = corpus_api.get("/api/v1/medallions/", {**query, "status": "archived"})
    assert bad.status_code == 400 and bad.json()["error"]["details"] == {"status": ["archived"]}


@pytest.mark.django_db
def test_ordering_is_by_real_timestamps_newest_first(
    corpus: dict[str, Any], make_client: Callable[..., ApiClient]
) -> None:
    workspace = Workspace.objects.create(slug="clock", name="Clock")
    # As text, "2025-12-31T23:59:59+00:00" sorts before "2026-01-01T00:00:00+05:00"; in time it is after.
    late = medallion_row(
        workspace, ["n"], ["t"], updated_at=datetime(2025, 12, 31, 23, 59, 59, tzinfo=UTC), high_level="late"
    )
    early = medallion_row(
        workspace,
        ["n", "m"],
        ["t"],
        updated_at=datetime.fromisoformat("2026-01-01T00:00:00+05:00"),
        high_level="early",
    )
    Medallion.objects.bulk_create([early, late])
    api = make_client(workspace, ApiKey.Scope.READ)
    assert labels_of(api.get("/api/v1/medallions/", {"graph_nodes": "n"})) == ["late", "early"]


@pytest.mark.django_db
def test_the_list_is_one_query_whatever_the_page_size(
    corpus_api: ApiClient, django_assert_num_queries: Any
) -> None:
    corpus_api.get("/api/v1/medallions/", {"tags": "refactor", "limit": "1"})  # warm the key
    for limit in (1, 200):
        # 1 query reads the page (source thread ids joined in); the key is remembered since the warm-up.
        with django_assert_num_queries(1):
            response = corpus_api.get("/api/v1/medallions/", {"tags": "refactor", "limit": limit})
        assert len(response.json()["results"]) == limit


@pytest.mark.django_db
def test_other_workspaces_medallions_never_match(corpus: dict[str, Any], api: ApiClient) -> None:
    response = api.get("/api/v1/medallions/", {"graph_nodes": "repo:muse", "status": "any"})
    assert response.status_code == 200 and response.json()["results"] == []


@pytest.mark.django_db
@pytest.mark.postgres
def test_the_scope_lookups_use_the_gin_indexes(corpus: dict[str, Any]) -> None:
    scope = MedallionScope(graph_nodes=["repo:muse", "module:cli"], tags=["refactor"])
    nodes_only = Medallion.objects.filter(graph_nodes__has_all_elements=scope.graph_nodes)
    tags_only = Medallion.objects.filter(tags__has_any_element=scope.tags)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    # One two-column GIN index serves either side alone, and both together (`medallion_scope_gin`).
    assert "medallion_scope_gin" in nodes_only.explain()
    assert "medallion_scope_gin" in tags_only.explain()
    full = medallions_for_scope(workspace=corpus["workspace"], scope=scope)
    assert "Seq Scan" not in full.explain()
