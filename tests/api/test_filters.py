"""The list endpoints' FilterSets are only built when the request names one of their filters: without any,
a FilterSet filters nothing (`checkpoints.api.filters.filter_queryset`), so the list's queryset is used as it
is. Pinned here: the premise, for every FilterSet of the API, and that the shortcut is taken."""

from __future__ import annotations

from typing import Any

import django_filters
import pytest
from django.http import QueryDict

from checkpoints.api import filters
from checkpoints.api.filters import filter_queryset
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

FILTERSETS = [
    value
    for value in vars(filters).values()
    if isinstance(value, type)
    and issubclass(value, django_filters.FilterSet)
    and value.__module__ == filters.__name__
]


def test_every_filterset_of_the_api_is_checked_here() -> None:
    assert {filterset.__name__ for filterset in FILTERSETS} >= {
        "ThreadCheckpointFilterSet",
        "CheckpointFilterSet",
        "ThreadFilterSet",
        "WorkspaceMessageFilterSet",
        "MessageFilterSet",
        "JobFilterSet",
    }


@pytest.mark.parametrize("filterset_class", FILTERSETS, ids=lambda filterset: filterset.__name__)
@pytest.mark.parametrize("query", ["", "limit=5&cursor=x&include_state=true&user_id=u"])
def test_without_its_parameters_a_filterset_filters_nothing(filterset_class: Any, query: str) -> None:
    queryset = filterset_class._meta.model.objects.all()
    filterset = filterset_class(QueryDict(query), queryset=queryset)
    assert filterset.is_valid(), filterset.errors
    assert str(filterset.qs.query) == str(queryset.query)  # what the shortcut returns instead
    assert filter_queryset(filterset_class, QueryDict(query), queryset) is queryset


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[type[Any]]:
    """The FilterSet classes instantiated from here on, in order."""
    classes: list[type[Any]] = []
    original = django_filters.FilterSet.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        classes.append(type(self))
        original(self, *args, **kwargs)

    monkeypatch.setattr(django_filters.FilterSet, "__init__", recording)
    return classes


def test_a_list_builds_its_filterset_only_for_a_filter(api: ApiClient, built: list[type[Any]]) -> None:
    for agent_id in ("a", "b"):
        make_checkpoint(api.workspace, "t1", agent_id=agent_id)
    unfiltered = api.get("/api/v1/threads/t1/checkpoints/?limit=5")
    assert [c["agent_id"] for c in unfiltered.json()["results"]] == ["b", "a"]
    assert built == []
    filtered = api.get("/api/v1/threads/t1/checkpoints/?limit=5&agent_id=a")
    assert [c["agent_id"] for c in filtered.json()["results"]] == ["a"]
    assert built == [filters.ThreadCheckpointFilterSet]
    refused = api.get("/api/v1/threads/t1/checkpoints/?created_after=")
    assert refused.status_code == 400, refused.content  # present but empty: still the FilterSet's to judge
    assert refused.json()["error"]["details"]["fields"] == {
        "created_after": ["Enter a timestamp, or leave the parameter out."]
    }


def test_langgraphs_get_tuple_builds_no_filterset(api: ApiClient, built: list[type[Any]]) -> None:
    for n, run_id in enumerate(("r1", "r2")):
        step = {
            "checkpoint_id": f"g{n}",
            "agent_id": "graph",
            "run_id": run_id,
            "state": {"channel_values": {}},
        }
        assert api.post("/api/v1/langgraph/threads/t2/checkpoints/", step).status_code == 201
    lg = "/api/v1/langgraph/checkpoints/"
    assert [c["checkpoint_id"] for c in api.get(f"{lg}?thread_id=t2&limit=1").json()["results"]] == ["g1"]
    assert [c["checkpoint_id"] for c in api.get(f"{lg}?thread_id=t2&checkpoint_id=g0").json()["results"]] == [
        "g0"
    ]
    assert api.get(f"{lg}?thread_id=other").json()["results"] == []
    assert built == []
    assert [c["checkpoint_id"] for c in api.get(f"{lg}?thread_id=t2&run_id=r1").json()["results"]] == ["g0"]
    assert built == [filters.ThreadCheckpointFilterSet]
