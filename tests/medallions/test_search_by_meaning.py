"""Medallions by meaning (docs/medallions.md, "Search by meaning"): every version is embedded when written,
`POST medallions/search/` ranks a scope's medallions against a query, pages, isolates workspaces, and the
medallions written before vectors existed are embedded by `manage.py embed_medallions`."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from checkpoints.models import Medallion
from tests.api.test_medallions import create
from tests.conftest import ApiClient
from tests.medallions.fixtures import UNRELATED_SUBJECTS

pytestmark = pytest.mark.django_db
SEARCH = "/api/v1/medallions/search/"


def scope(*tags: str) -> dict[str, Any]:
    return {"graph_nodes": ["repo:muse"], "tags": list(tags)}


def summary(text: str) -> dict[str, Any]:
    return {"high_level": text, "subsystems": []}


def written(api: ApiClient) -> dict[str, str]:
    """Three medallions of one repo, about unrelated things; their ids by subject."""
    return {
        subject: create(api, scope=scope(subject), summary=summary(text), decisions=[], open_questions=[])[
            "meta"
        ]["medallion_id"]
        for subject, text in UNRELATED_SUBJECTS.items()
    }


def search(api: ApiClient, body: dict[str, Any], query: str = "") -> dict[str, Any]:
    response = api.post(SEARCH + query, body)
    assert response.status_code == 200, response.json()
    return response.json()


def vector_of(medallion_id: str) -> bytes:
    blob = Medallion.objects.get(medallion_id=medallion_id).vector
    assert blob is not None
    return bytes(blob)


def test_it_embeds_every_version_when_written(api: ApiClient) -> None:
    ids = written(api)
    vectors = dict(Medallion.objects.values_list("medallion_id", "vector"))
    assert {str(key) for key, blob in vectors.items() if blob} == set(ids.values())
    before = vector_of(ids["dogs"])
    patch = {"summary": summary("Tax forms for the dog's veterinary invoices.")}
    assert api.patch(f"/api/v1/medallions/{ids['dogs']}/", patch).status_code == 200
    assert vector_of(ids["dogs"]) != before


def test_it_ranks_the_closest_medallion_first_with_scores(read_api: ApiClient, api: ApiClient) -> None:
    ids = written(api)
    body = search(read_api, {"query": "a puppy playing fetch", "graph_nodes": ["repo:muse"]})
    found = [m["meta"]["medallion_id"] for m in body["results"]]
    assert found[0] == ids["dogs"] and set(found) == set(ids.values())
    scores = [m["score"] for m in body["results"]]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
    assert body["results"][0]["summary"]["high_level"].startswith("Dogs and puppies")
    assert body["next"] is None and body["previous"] is None
    rockets = search(read_api, {"query": "spaceflight", "tags": ["rockets", "tax"]})
    assert [m["meta"]["medallion_id"] for m in rockets["results"]] == [ids["rockets"], ids["tax"]]


def test_it_pages_the_ranking_with_cursors(api: ApiClient) -> None:
    ids = written(api)
    body = {"query": "pets", "graph_nodes": ["repo:muse"]}
    first = search(api, body, "?limit=2")
    assert len(first["results"]) == 2 and first["previous"] is None and first["next"]
    second = api.post(first["next"], body).json()
    assert len(second["results"]) == 1 and second["next"] is None and second["previous"]
    seen = [m["meta"]["medallion_id"] for m in first["results"] + second["results"]]
    assert sorted(seen) == sorted(ids.values()) and seen[0] == ids["dogs"]


def test_unembedded_medallions_follow_unranked_until_the_command_embeds_them(api: ApiClient) -> None:
    ids = written(api)
    Medallion.objects.filter(medallion_id=ids["dogs"]).update(vector=None)  # as written before 0015
    found = search(api, {"query": "puppies", "graph_nodes": ["repo:muse"]})["results"]
    assert found[-1]["meta"]["medallion_id"] == ids["dogs"] and found[-1]["score"] is None
    assert all(m["score"] is not None for m in found[:-1])
    out = StringIO()
    call_command("embed_medallions", stdout=out)
    assert out.getvalue().strip() == "embedded: 1"
    found = search(api, {"query": "puppies", "graph_nodes": ["repo:muse"]})["results"]
    assert found[0]["meta"]["medallion_id"] == ids["dogs"] and found[0]["score"] is not None
    call_command("embed_medallions", stdout=(again := StringIO()))
    assert again.getvalue().strip() == "embedded: 0"


def test_status_selects_as_in_the_list(api: ApiClient) -> None:
    ids = written(api)
    assert api.patch(f"/api/v1/medallions/{ids['dogs']}/", {"status": "stale"}).status_code == 200
    active = search(api, {"query": "dogs", "graph_nodes": ["repo:muse"]})["results"]
    assert ids["dogs"] not in [m["meta"]["medallion_id"] for m in active]
    stale = search(api, {"query": "dogs", "graph_nodes": ["repo:muse"], "status": ["stale"]})["results"]
    assert [m["meta"]["medallion_id"] for m in stale] == [ids["dogs"]]


def test_another_workspace_is_never_searched(api: ApiClient, other_api: ApiClient) -> None:
    written(api)
    body = search(other_api, {"query": "dogs", "graph_nodes": ["repo:muse"]})
    assert body == {"results": [], "next": None, "previous": None}


@pytest.mark.parametrize(
    ("body", "query", "field"),
    [
        ({}, "", "query"),
        ({"query": ""}, "", "query"),
        ({"query": "x", "tags": "dogs"}, "", "tags"),
        ({"query": "x", "status": ["gone"]}, "", "status"),
        ({"query": "x", "extra": 1}, "", "extra"),
        ({"query": "x"}, "?limit=0", "limit"),
        ({"query": "x"}, "?cursor=bm90IGpzb24", "cursor"),
    ],
)
def test_bad_input_is_a_400_in_the_error_envelope(
    api: ApiClient, body: dict[str, Any], query: str, field: str
) -> None:
    response = api.post(SEARCH + query, body)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "validation_error" and field in str(error)


def test_a_key_without_the_read_scope_is_refused(api: ApiClient) -> None:
    anonymous = ApiClient()
    response = anonymous.post(SEARCH, {"query": "x"})
    assert response.status_code == 401 and response.json()["error"]["code"]


def test_the_openapi_document_describes_the_search() -> None:
    document = yaml.safe_load(ApiClient().get("/api/v1/schema/").content)
    operation = document["paths"]["/api/v1/medallions/search/"]["post"]
    assert operation["operationId"] == "medallions_search"
    assert {p["name"] for p in operation["parameters"]} >= {"limit", "cursor"}
    page = operation["responses"]["200"]["content"]["application/json"]["schema"]
    item = page["properties"]["results"]["items"]
    assert item["properties"]["score"] == {"type": "number", "nullable": True}
