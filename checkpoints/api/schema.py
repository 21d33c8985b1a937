"""What the generated OpenAPI document cannot know by itself, added by a drf-spectacular postprocessing hook:

- request bodies are JSON (the one parser reads JSON whatever the Content-Type says; documenting `*/*` would
  invite clients and fuzzers to send forms);
- every request object is closed (`additionalProperties: false`): the strict serializers refuse unknown
  keys, so the schema says so;
- the errors each operation can answer, all in the one envelope `{"error": {"code", "message", "details"}}`;
- page sizes are 1..500.

The schemathesis run in the test suite (tests/schemathesis/) holds the API to this document: a status or a
body the document does not describe fails it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.openapi import AutoSchema

from checkpoints.api.pagination import MAX_LIMIT


class FilteredAutoSchema(AutoSchema):
    """The API's views are APIViews rather than generic list views, so drf-spectacular would not look at
    their filters: a GET of a view with a `filterset_class` documents the FilterSet's parameters."""

    def get_filter_backends(self) -> list[Any]:
        if self.method == "GET" and getattr(self.view, "filterset_class", None) is not None:
            return list(getattr(self.view, "filter_backends", []))
        return []


class FilterSetParameters(DjangoFilterExtension):
    """django-filter's own schema extension, finding the model on the FilterSet (the views have no
    `queryset` to find it on)."""

    target_class = "checkpoints.api.filters.FilterBackend"
    priority = 1

    def get_schema_operation_parameters(self, auto_schema: Any, *args: Any, **kwargs: Any) -> list[Any]:
        filterset_class = auto_schema.view.filterset_class
        model = filterset_class._meta.model
        return [
            parameter
            for name, field in filterset_class.base_filters.items()
            for parameter in self.resolve_filter_field(auto_schema, model, filterset_class, name, field)
        ]


ERROR_SCHEMA = "Error"
_ERROR = {
    "type": "object",
    "description": "Every error has this shape; `code` names the condition (see the error table).",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"type": "object", "additionalProperties": True},
            },
            "required": ["code", "message", "details"],
            "additionalProperties": False,
        }
    },
    "required": ["error"],
    "additionalProperties": False,
}
DESCRIPTIONS = {
    "400": "validation_error: malformed JSON, wrong types, unknown or read-only fields, bad query parameters",
    "401": "not_authenticated: missing, invalid, revoked or expired key",
    "403": "permission_denied: the key's scope does not allow this",
    "404": "not_found: missing, or in another workspace",
    "408": "request_timeout: the request was not received in full within CAIRN_REQUEST_READ_TIMEOUT_SECONDS",
    "409": "conflict, checksum_mismatch or ambiguous_id",
    "410": "gone: the checkpoint expired (the tombstone is in details.checkpoint)",
    "412": "precondition_failed: If-Match names something that is no longer current",
    "413": "payload_too_large: the body is over CAIRN_MAX_BODY_BYTES",
    "414": "uri_too_long: the request line (method, path and query) is over 4094 bytes",
    "422": "diff_too_large: the two documents hold more JSON values than CAIRN_DIFF_MAX_NODES",
    "429": "throttled: over the key's rate (Retry-After says when to retry)",
    "431": "header_fields_too_large: over 100 header fields, or one over 8190 bytes",
    "503": "unavailable: the database (or, for jobs, the broker) is unreachable",
}
_WRITES = {"post", "put", "patch", "delete"}
# Where a precondition can fail: If-Match on PUT state/ and PATCH medallions/{id}/, and a LangGraph save
# whose inherited channels the parent does not hold.
_PRECONDITIONS = {
    ("/api/v1/threads/{thread_id}/state/", "put"),
    ("/api/v1/medallions/{medallion_id}/", "patch"),
    ("/api/v1/langgraph/threads/{thread_id}/checkpoints/", "post"),
}


def error_statuses(path: str, method: str) -> list[str]:
    """The error statuses an operation can answer."""
    # The server answers 408, 414 and 431 before routing, so every operation can.
    statuses = ["400", "401", "404", "408", "414", "429", "431", "503"]
    if method in _WRITES:
        statuses += ["403", "409", "413"]
    # Operations that read one checkpoint's payload: it may be altered (409 checksum_mismatch), ambiguous
    # (409) or expired (410). A fork starts from a checkpoint named in its body; a save that retries an id
    # whose checkpoint has expired is a 410 too.
    saves = method == "post" and path.endswith("/checkpoints/")
    if "{checkpoint_id}" in path or path.endswith(("/state/", "/fork/")) or "/langgraph/" in path or saves:
        statuses += ["409", "410"]
    if (path, method) in _PRECONDITIONS:
        statuses.append("412")
    if path.endswith("/diff/"):
        statuses.append("422")
    return sorted(set(statuses))


def _close(schema: dict[str, Any]) -> None:
    if schema.get("type") == "object" and "properties" in schema:
        schema.setdefault("additionalProperties", False)


def document_contract(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """POSTPROCESSING_HOOKS entry: JSON-only request bodies, closed request objects, documented errors."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components[ERROR_SCHEMA] = _ERROR
    for name, schema in components.items():
        if name.endswith("Request"):  # COMPONENT_SPLIT_REQUEST names every request component *Request
            _close(schema)
    error_ref = {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and parameter.get("name") == "limit":
                    parameter["schema"] = {**parameter.get("schema", {}), "minimum": 1, "maximum": MAX_LIMIT}
            body = operation.get("requestBody")
            if body and "content" in body:
                schemas = [content.get("schema") for content in body["content"].values()]
                body["content"] = {"application/json": {"schema": next((s for s in schemas if s), {})}}
                _close(body["content"]["application/json"]["schema"])
            for status in error_statuses(path, method):
                operation["responses"].setdefault(
                    status,
                    {
                        "description": DESCRIPTIONS[status],
                        "content": {"application/json": {"schema": error_ref}},
                    },
                )
    return result
