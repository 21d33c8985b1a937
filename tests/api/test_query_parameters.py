"""Unknown query parameters are a 400, like unknown body fields: a typo must not silently widen a filter or
drop an option. What each operation accepts comes from the definitions the OpenAPI document is generated from
(the view's FilterSet and its declared parameters: checkpoints.api.query_params), and is held to it here."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from django.test import Client

from checkpoints.api.query_params import openapi_path, query_parameter_table
from checkpoints.models import Checkpoint, Thread, Workspace
from tests.conftest import ApiClient
from tests.factories import make_checkpoint
from tests.security.routes import Route, routes_of

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"


def _unknown(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error", error
    return dict(error["details"]["fields"])


def test_a_misspelled_filter_is_refused_rather_than_ignored(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace=workspace, thread_id="t1", agent_id="a")
    make_checkpoint(workspace=workspace, thread_id="t1", agent_id="b")

    assert _unknown(api.get(f"{CPS}?agnet_id=a")) == {"agnet_id": ["Unknown query parameter."]}
    response = api.get(f"{CPS}?agent_id=a")
    assert [c["agent_id"] for c in response.json()["results"]] == ["a"]


def test_the_message_lists_what_the_operation_accepts(api: ApiClient) -> None:
    response = api.get("/api/v1/jobs/?state=queued")
    message = response.json()["error"]["message"]
    assert message.startswith("Unknown query parameter(s): 'state'. Known here: ")
    assert "kind" in message and "status" in message and "cursor" in message


def test_an_empty_parameter_name_is_unknown(api: ApiClient) -> None:
    assert _unknown(api.get("/api/v1/checkpoints/?agent_id=&=null")) == {"": ["Unknown query parameter."]}


def test_a_write_with_an_unknown_parameter_stores_nothing(api: ApiClient) -> None:
    response = api.post(f"{CPS}?namepsace=sub", {"agent_id": "a", "state": {"n": 1}})
    assert _unknown(response) == {"namepsace": ["Unknown query parameter."]}
    assert not Thread.objects.exists() and not Checkpoint.objects.exists()


def test_documented_parameters_are_accepted(api: ApiClient) -> None:
    saved = api.post(f"{CPS}?namespace=sub&include_state=false&user_id=", {"agent_id": "a", "state": {}})
    assert saved.status_code == 201, saved.content
    assert saved.json()["namespace"] == "sub" and "state" not in saved.json()


def test_authentication_is_checked_before_parameters(client: Client) -> None:
    response = client.get(f"{CPS}?bogus=1")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


@cache
def _documented() -> dict[tuple[str, str], frozenset[str]]:
    """`{(openapi path, METHOD): query parameter names}` as the OpenAPI document lists them."""
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (path, method.upper()): frozenset(
            p["name"] for p in operation.get("parameters", []) if p["in"] == "query"
        )
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }


@pytest.mark.parametrize("route", routes_of("api"), ids=str)
def test_each_operation_accepts_exactly_what_the_document_lists(route: Route) -> None:
    """A parameter accepted but undocumented (or documented but refused) fails here, for every operation."""
    accepted = query_parameter_table()
    for method in route.methods:
        key = (openapi_path(route.template), method.upper())
        assert key in accepted, (route, method)
        assert accepted[key] == _documented()[key], (route, method)


def test_a_filter_of_the_workspace_timeline_is_refused_on_a_thread_timeline(api: ApiClient) -> None:
    """The thread is in the path: `thread_id` filters only the workspace-wide timeline."""
    assert _unknown(api.get(f"{CPS}?thread_id=t1")) == {"thread_id": ["Unknown query parameter."]}
    assert api.get("/api/v1/checkpoints/?thread_id=t1").json() == {
        "results": [],
        "next": None,
        "previous": None,
    }
