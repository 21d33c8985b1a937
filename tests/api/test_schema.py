"""The OpenAPI 3 document and the interactive docs, which must work without internet access."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from django.contrib.staticfiles import finders
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

CHECKPOINT_OPERATIONS = {
    "/api/v1/threads/{thread_id}/state/": {"get", "put"},
    "/api/v1/threads/{thread_id}/checkpoints/": {"get", "post"},
    "/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/": {"get", "delete"},
    "/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/ttl/": {"post"},
    "/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/handoff/": {"post"},
    "/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/diff/": {"get"},
    "/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/lineage/": {"get"},
    "/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/writes/": {"get", "post"},
    "/api/v1/checkpoints/": {"get"},
    "/api/v1/checkpoints/{checkpoint_id}/": {"get"},
}
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "options", "head"}


@pytest.fixture
def schema() -> dict[str, Any]:
    response = APIClient().get("/api/v1/schema/")
    assert response.status_code == 200
    document = yaml.safe_load(response.content)
    assert isinstance(document, dict)
    return document


def test_it_serves_a_valid_openapi_3_document_without_a_key(schema: dict[str, Any]) -> None:
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)  # raises on any violation of the OpenAPI 3 JSON schema
    assert schema["info"]["title"] == "Cairn API"
    scheme = schema["components"]["securitySchemes"]["ApiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert schema["paths"]["/api/v1/checkpoints/"]["get"]["security"] == [{"ApiKey": []}]


def test_it_serves_json_too() -> None:
    response = APIClient().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.")


def test_it_documents_every_checkpoint_operation(schema: dict[str, Any]) -> None:
    for path, methods in CHECKPOINT_OPERATIONS.items():
        assert path in schema["paths"], path
        assert set(schema["paths"][path]) & HTTP_METHODS == methods, path
    ids = [
        op["operationId"] for ops in schema["paths"].values() for m, op in ops.items() if m in HTTP_METHODS
    ]
    assert len(ids) == len(set(ids))


def test_it_describes_the_checkpoint_bodies_with_real_types(schema: dict[str, Any]) -> None:
    create = schema["components"]["schemas"]["CheckpointCreateRequest"]
    assert set(create["required"]) == {"agent_id", "state"}
    properties = create["properties"]
    assert properties["context"]["type"] == "object"
    assert properties["created_at"]["format"] == "date-time"
    assert properties["step_index"]["type"] == "integer"
    assert "type" not in properties["state"]  # any JSON value
    representation = schema["components"]["schemas"]["Checkpoint"]["properties"]
    assert {"checksum", "expired_at", "size_bytes", "handoff_from"} <= set(representation)


def test_it_serves_the_interactive_docs_from_local_assets() -> None:
    response = APIClient().get("/api/v1/docs/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "/api/v1/schema/" in html
    # No address of another host anywhere in the page (the page embeds random tokens, so a bare word
    # such as "cdn" may appear in it by chance: look for hosts, not words).
    assert not re.search(r"(?i)(?:https?:)?//[a-z0-9.-]*(?:cdn|unpkg|jsdelivr|googleapis)", html)
    assert not re.search(r"(?i)(?:src|href)\s*=\s*[\"']?(?:https?:)?//", html)
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    for asset in assets:
        assert asset.startswith("/static/"), asset
        assert finders.find(asset.removeprefix("/static/")), asset
