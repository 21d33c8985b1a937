"""What the schemathesis run found, pinned as plain tests (each failed before its fix), and the parts of the
document the run relies on."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from checkpoints.api.errors import exception_handler
from checkpoints.api.schema import error_statuses
from checkpoints.models import Checkpoint, Thread
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

HTTP_METHODS = {"get", "put", "post", "delete", "patch"}
# 408, 414 and 431 come from the web server, before routing: every operation can answer them.
READ_ERRORS = {"400", "401", "404", "408", "414", "429", "431", "503"}


@pytest.fixture
def schema() -> dict[str, Any]:
    document = yaml.safe_load(APIClient().get("/api/v1/schema/").content)
    assert isinstance(document, dict)
    return document


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/threads/t/checkpoints/?include_state=maybe"),
        ("post", "/api/v1/langgraph/threads/t/checkpoints/?include_state=2"),
        ("put", "/api/v1/threads/t/state/?include_state=yes-ish"),
        # Empty is not a boolean either (it was read as the default; schemathesis ST201).
        ("post", "/api/v1/langgraph/threads/t/checkpoints/?include_state="),
    ],
)
def test_it_refuses_a_bad_query_parameter_before_saving_anything(
    api: ApiClient, method: str, path: str
) -> None:
    response = getattr(api, method)(path, {"agent_id": "a", "state": {"n": 1}})
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"] == {
        "include_state": ["include_state must be true or false."]
    }
    # It used to answer 400 after committing the save.
    assert not Checkpoint.objects.exists() and not Thread.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/checkpoints/?created_before=",
        "/api/v1/threads/?updated_after=",
        "/api/v1/threads/t/checkpoints/?created_after=",
    ],
)
def test_it_refuses_an_empty_timestamp_filter_instead_of_ignoring_it(api: ApiClient, path: str) -> None:
    api.post("/api/v1/threads/t/checkpoints/", {"agent_id": "a", "state": {}})
    response = api.get(path)
    assert response.status_code == 400
    assert response.json()["error"]["message"].endswith("Enter a timestamp, or leave the parameter out.")


@pytest.mark.parametrize("parameter", ["include_state", "include_tombstones"])
def test_it_refuses_an_empty_boolean_instead_of_reading_the_default(api: ApiClient, parameter: str) -> None:
    api.post("/api/v1/threads/t/checkpoints/", {"agent_id": "a", "state": {}})
    response = api.get(f"/api/v1/threads/t/checkpoints/?{parameter}=")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"] == {
        parameter: [f"{parameter} must be true or false."]
    }


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        # Present but empty is not one of an enum's values, nor a number (schemathesis ST201 on `?role=`).
        ("/api/v1/threads/t/messages/?role=", "role"),
        ("/api/v1/messages/?role=", "role"),
        ("/api/v1/threads/t/checkpoints/?framework=", "framework"),
        ("/api/v1/checkpoints/?framework=", "framework"),
        ("/api/v1/jobs/?status=", "status"),
        ("/api/v1/threads/?ordering=", "ordering"),
        ("/api/v1/threads/?limit=", "limit"),
        ("/api/v1/threads/t/messages/?limit=", "limit"),
    ],
)
def test_it_refuses_an_empty_enum_or_number_instead_of_ignoring_it(
    api: ApiClient, path: str, parameter: str
) -> None:
    api.post("/api/v1/threads/t/checkpoints/", {"agent_id": "a", "state": {}})
    response = api.get(path)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert list(error["details"]["fields"]) == [parameter]


def test_it_refuses_an_empty_wait_before_starting_the_job(api: ApiClient) -> None:
    response = api.post("/api/v1/medallions/checkpoint/?wait=", {})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"].startswith("wait must be a number of seconds")


def test_it_answers_404_for_a_row_that_vanished_mid_request() -> None:
    # A PATCH racing a DELETE of the same thread re-read a row that no longer existed: a 500, now a 404.
    response = exception_handler(Thread.DoesNotExist("gone"), {})
    assert response is not None and response.status_code == 404
    assert response.data == {"error": {"code": "not_found", "message": "Not found.", "details": {}}}


def test_every_request_body_is_json_and_closed(schema: dict[str, Any]) -> None:
    bodies = 0
    for operations in schema["paths"].values():
        for method, operation in operations.items():
            if method in HTTP_METHODS and "requestBody" in operation:
                bodies += 1
                assert list(operation["requestBody"]["content"]) == ["application/json"]
    assert bodies >= 15
    for name, component in schema["components"]["schemas"].items():
        if name.endswith("Request") and "properties" in component:
            assert component["additionalProperties"] is False, name


def test_every_operation_documents_its_errors_in_the_envelope(schema: dict[str, Any]) -> None:
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in HTTP_METHODS:
                continue
            for status in error_statuses(path, method):
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/Error"}, (path, method, status)
    envelope = schema["components"]["schemas"]["Error"]
    assert envelope["required"] == ["error"]
    assert envelope["properties"]["error"]["required"] == ["code", "message", "details"]


def test_it_documents_page_sizes(schema: dict[str, Any]) -> None:
    limits = [
        parameter["schema"]
        for operations in schema["paths"].values()
        for operation in operations.values()
        if isinstance(operation, dict)
        for parameter in operation.get("parameters", [])
        if parameter["name"] == "limit" and parameter["in"] == "query"
    ]
    assert len(limits) >= 8
    assert all((limit["minimum"], limit["maximum"]) == (1, 500) for limit in limits)


@pytest.mark.parametrize(
    ("path", "method", "expected"),
    [
        ("/api/v1/threads/", "get", READ_ERRORS),
        ("/api/v1/threads/", "post", {*READ_ERRORS, "403", "409", "413"}),
        ("/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/", "get", {*READ_ERRORS, "409", "410"}),
        ("/api/v1/threads/{thread_id}/state/", "put", {*READ_ERRORS, "403", "409", "410", "412", "413"}),
        # A save retrying the id of a checkpoint that has since expired is a 410 (schemathesis ST103).
        ("/api/v1/threads/{thread_id}/checkpoints/", "post", {*READ_ERRORS, "403", "409", "410", "413"}),
    ],
)
def test_it_names_the_errors_each_kind_of_operation_can_answer(
    path: str, method: str, expected: set[str]
) -> None:
    assert set(error_statuses(path, method)) == expected


def _only_required(node: dict[str, Any]) -> Any:
    """The smallest value the document allows: objects with only their required properties."""
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object":
        return {name: _only_required(node["properties"][name]) for name in node.get("required", [])}
    if kind == "array":
        return [_only_required(node["items"])]
    samples: dict[str, Any] = {"string": "x", "number": 0.5, "integer": 1, "boolean": True}
    return samples[str(kind)]


@pytest.mark.parametrize(
    ("path", "operation_path", "status"),
    [
        ("/api/v1/medallions/", "/api/v1/medallions/", 201),
        ("/api/v1/medallions/checkpoint/", "/api/v1/medallions/checkpoint/", 202),
    ],
)
def test_a_body_with_only_what_the_document_requires_is_accepted(
    api: ApiClient, schema: dict[str, Any], path: str, operation_path: str, status: int
) -> None:
    # The medallion bodies reused the response schema, where every property is required; the server
    # accepted a scope without `graph_nodes` that the document called invalid. Every property the document
    # leaves optional must really be optional, at every depth.
    body_schema = schema["paths"][operation_path]["post"]["requestBody"]["content"]["application/json"]
    body = _only_required(body_schema["schema"])
    body["scope"] = {"tags": ["only-tags"]}  # an empty scope is refused by a rule OpenAPI cannot state
    response = api.post(path, body)
    assert response.status_code == status, response.json()
    assert "required" not in body_schema["schema"]["properties"]["scope"]
