"""Hostile input on every checkpoint endpoint: always the right 4xx in the error envelope, never a 500, and
nothing stored."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, IntegrityError, OperationalError
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkpoints.api.errors import exception_handler
from checkpoints.models import Checkpoint, PendingWrite, Thread
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"
# Every checkpoint endpoint that takes a body, with a valid body for it.
BODY_ENDPOINTS: list[tuple[str, str, dict[str, Any]]] = [
    ("post", CPS, {"agent_id": "a", "state": {"n": 1}}),
    ("put", "/api/v1/threads/t1/state/", {"agent_id": "a", "state": {"n": 1}}),
    ("post", f"{CPS}c1/ttl/", {"ttl_seconds": 60}),
    ("post", f"{CPS}c1/handoff/", {"target_agent_id": "b"}),
    ("post", f"{CPS}c1/writes/", {"task_id": "t", "writes": [{"channel": "c", "value": 1}]}),
]
GET_ENDPOINTS = [
    "/api/v1/threads/t1/state/",
    CPS,
    f"{CPS}c1/",
    f"{CPS}c1/diff/",
    f"{CPS}c1/lineage/",
    f"{CPS}c1/writes/",
    "/api/v1/checkpoints/",
    "/api/v1/checkpoints/c1/",
]
LIST_ENDPOINTS = [CPS, "/api/v1/checkpoints/", f"{CPS}c1/lineage/"]


@pytest.fixture(autouse=True)
def existing(workspace: Any) -> Checkpoint:
    return make_checkpoint(workspace, "t1", checkpoint_id="c1")


def _raw(api: ApiClient, method: str, url: str, body: bytes, content_type: str = "application/json") -> Any:
    client: Any = api  # the stubs say str; the test client sends bytes as they are, which these tests need
    return client.generic(method.upper(), url, body, content_type=content_type)


def _chunked(api: ApiClient, method: str, url: str, body: bytes) -> Any:
    """A body without Content-Length, as gunicorn hands over a chunked request."""
    client: Any = api
    return client.generic(
        method.upper(),
        url,
        b"",
        **{
            "wsgi.input": io.BytesIO(body),
            "wsgi.input_terminated": True,
            "HTTP_TRANSFER_ENCODING": "chunked",
            "CONTENT_TYPE": "application/json",
        },
    )


def _stored() -> tuple[int, int, int]:
    return Checkpoint.objects.count(), PendingWrite.objects.count(), Thread.objects.count()


def _error(response: Any, status: int = 400, code: str = "validation_error") -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code
    assert set(error) == {"code", "message", "details"}
    return error


def _refused_storing_nothing(
    send: Callable[[], Any], status: int = 400, code: str = "validation_error"
) -> Any:
    """The error of the request `send` makes, once it is checked that the refused request stored nothing."""
    before = _stored()
    error = _error(send(), status, code)
    assert _stored() == before
    return error


def _field_error(response: Any, field: str) -> list[str]:
    error = _error(response)
    assert field in error["details"]["fields"], error
    return error["details"]["fields"][field]


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


RAW_BODIES: dict[str, tuple[bytes, str]] = {
    "invalid_utf8": (b'{"agent_id": "\xff\xfe", "state": {}}', "not valid UTF-8"),
    "truncated": (b'{"agent_id": "a", "state": {', "Malformed JSON"),
    "nan": (b'{"agent_id": "a", "state": {"x": NaN}}', "NaN is not valid JSON"),
    "infinity": (b'{"agent_id": "a", "state": {"x": Infinity}}', "Infinity is not valid JSON"),
    "minus_infinity": (b'{"agent_id": "a", "state": {"x": -Infinity}}', "-Infinity is not valid JSON"),
    "float_overflow": (b'{"agent_id": "a", "state": {"x": 1e400}}', "out of range"),
    "duplicate_key": (b'{"agent_id": "a", "agent_id": "b", "state": {}}', "Duplicate key 'agent_id'"),
    "duplicate_nested_key": (b'{"agent_id": "a", "state": {"k": 1, "k": 2}}', "Duplicate key 'k'"),
    "int_5000_digits": (b'{"agent_id": "a", "state": {"x": ' + b"9" * 5000 + b"}}", "Malformed JSON"),
    "lone_high_surrogate": (b'{"agent_id": "a", "state": {"x": "\\ud800"}}', "lone UTF-16 surrogate"),
    "lone_low_surrogate": (b'{"agent_id": "a", "state": {"x": "\\udc00"}}', "lone UTF-16 surrogate"),
    "surrogate_in_key": (b'{"agent_id": "a", "state": {"\\ud800": 1}}', "lone UTF-16 surrogate"),
    "reversed_pair": (b'{"agent_id": "a", "state": {"x": "\\ude00\\ud83d"}}', "lone UTF-16 surrogate"),
    "bom": (b'\xef\xbb\xbf{"agent_id": "a", "state": {}}', "Malformed JSON"),
    "empty": (b"   ", "The body is empty"),
    "too_deep": (json.dumps({"agent_id": "a", "state": _nested(128)}).encode(), "deeper than 128"),
    # Past the interpreter's recursion limit, where the decoder gives up before the depth is measured.
    "far_too_deep": (b'{"agent_id": "a", "state": ' + b"[" * 20_000 + b"]" * 20_000 + b"}", "than 128"),
    "far_too_deep_unclosed": (b'{"agent_id": "a", "state": ' + b"[" * 20_000, "deeper than 128"),
    "deep_quadratic_bait": (b'["' + b'\\"' * 50_000 + b"]", "Malformed JSON"),
}


@pytest.mark.parametrize(("method", "url", "valid"), BODY_ENDPOINTS)
@pytest.mark.parametrize("case", sorted(RAW_BODIES))
def test_it_refuses_malformed_bodies_everywhere(
    api: ApiClient, method: str, url: str, valid: dict[str, Any], case: str
) -> None:
    body, message = RAW_BODIES[case]
    assert message in _refused_storing_nothing(lambda: _raw(api, method, url, body))["message"]


@pytest.mark.parametrize(("method", "url", "valid"), BODY_ENDPOINTS)
@pytest.mark.parametrize("body", [b"[]", b"[1]", b'"x"', b"1", b"true", b"null"])
def test_it_refuses_bodies_that_are_not_objects(
    api: ApiClient, method: str, url: str, valid: dict[str, Any], body: bytes
) -> None:
    error = _refused_storing_nothing(lambda: _raw(api, method, url, body))
    assert error["details"]["fields"]["non_field_errors"]


@pytest.mark.parametrize(("method", "url", "valid"), BODY_ENDPOINTS)
def test_it_accepts_a_valid_body_on_every_endpoint(
    api: ApiClient, method: str, url: str, valid: dict[str, Any]
) -> None:
    response = _raw(
        api, method, url, json.dumps(valid).encode(), content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code in (200, 201), response.content


@pytest.mark.parametrize(("method", "url", "valid"), BODY_ENDPOINTS)
@pytest.mark.parametrize("field", ["surprise", "workspace", "id"])
def test_it_refuses_unknown_fields(
    api: ApiClient, method: str, url: str, valid: dict[str, Any], field: str
) -> None:
    assert _field_error(getattr(api, method)(url, {**valid, field: 1}), field) == ["Unknown field."]


READ_ONLY = {
    CPS: [
        "thread_id",
        "size_bytes",
        "expired_at",
        "expires_at",
        "message_seq",
        "handoff_target",
        "handoff_from",
        "written_by",
    ],
    "/api/v1/threads/t1/state/": ["parent_id", "size_bytes", "expired_at", "thread_id"],
    f"{CPS}c1/ttl/": ["checksum", "expires_at", "expired_at", "state", "checkpoint_id", "created_at"],
    f"{CPS}c1/handoff/": ["checksum", "agent_id", "state", "parent_id", "size_bytes"],
    f"{CPS}c1/writes/": ["created_at", "checkpoint_id", "namespace"],
}


@pytest.mark.parametrize(("method", "url", "valid"), BODY_ENDPOINTS)
def test_it_refuses_read_only_fields(api: ApiClient, method: str, url: str, valid: dict[str, Any]) -> None:
    for field in READ_ONLY[url]:
        before = _stored()
        response = getattr(api, method)(url, {**valid, field: "x"})
        assert _field_error(response, field) == ["This field is read-only."], field
        assert _stored() == before


def test_it_refuses_read_only_fields_inside_pending_writes(api: ApiClient) -> None:
    response = api.post(
        f"{CPS}c1/writes/", {"task_id": "t", "writes": [{"channel": "c", "value": 1, "created_at": "x"}]}
    )
    assert _field_error(response, "writes") == {"0": {"created_at": ["This field is read-only."]}}


@override_settings(CAIRN_MAX_JSON_DEPTH=8)
@pytest.mark.parametrize(("method", "url", "valid"), BODY_ENDPOINTS)
def test_it_applies_the_configured_depth_limit(
    api: ApiClient, method: str, url: str, valid: dict[str, Any]
) -> None:
    # The body object is level 1, so a value at level 2 may nest 7 more levels.
    too_deep = {**valid, "extra": _nested(8)}
    error = _error(_raw(api, method, url, json.dumps(too_deep).encode()))
    assert error["message"] == "JSON nests deeper than 8 levels."
    assert error["details"] == {"max_depth": 8}


def test_it_accepts_exactly_the_default_depth_and_refuses_one_more(api: ApiClient) -> None:
    at_limit = {"agent_id": "a", "state": _nested(127)}  # 1 (body) + 127 = 128 levels
    saved = _raw(api, "post", CPS, json.dumps(at_limit).encode())
    assert saved.status_code == 201, saved.content
    assert api.get(f"{CPS}{saved.json()['checkpoint_id']}/").json()["state"] == _nested(127)
    over = {"agent_id": "a", "state": _nested(128)}
    assert _error(_raw(api, "post", CPS, json.dumps(over).encode()))["details"] == {"max_depth": 128}


def test_it_does_not_count_brackets_inside_strings(api: ApiClient) -> None:
    state = {"s": "[[[[{{{{" * 100, "q": '"[[[\\"]]', "bs": "\\" * 9 + "[[["}
    response = api.post(CPS, {"agent_id": "a", "state": state})
    assert response.status_code == 201
    assert response.json()["state"] == state


# How a body over the limit comes, and how far over: with its Content-Length, or chunked without one.
OVERSIZED_SENDS = [(_raw, 1000), (_chunked, 100_000)]


@override_settings(CAIRN_MAX_BODY_BYTES=1000)
@pytest.mark.parametrize(("method", "url", "valid"), BODY_ENDPOINTS)
@pytest.mark.parametrize(
    ("send", "pad"), OVERSIZED_SENDS, ids=["by_content_length", "without_content_length"]
)
def test_it_refuses_a_body_over_the_limit(
    api: ApiClient, method: str, url: str, valid: dict[str, Any], send: Callable[..., Any], pad: int
) -> None:
    body = json.dumps({**valid, "pad": "x" * pad}).encode()
    error = _refused_storing_nothing(lambda: send(api, method, url, body), 413, "payload_too_large")
    assert error["details"] == {"max_bytes": 1000}


@override_settings(CAIRN_MAX_BODY_BYTES=1000)
def test_it_reads_a_chunked_body_within_the_limit(api: ApiClient) -> None:
    response = _chunked(api, "post", CPS, json.dumps({"agent_id": "chunked", "state": {"n": 1}}).encode())
    assert response.status_code == 201, response.content
    assert response.json()["agent_id"] == "chunked"


def _raw_extra(api: ApiClient, **extra: str) -> Any:
    client: Any = api
    return client.generic("POST", CPS, b"{}", content_type="application/json", **extra)


def test_it_refuses_a_content_length_that_is_not_a_number(api: ApiClient) -> None:
    response = _raw_extra(api, CONTENT_LENGTH="ten")
    assert _error(response)["message"] == "Content-Length is not a number."


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("agent_id", "a\x00b"),
        ("namespace", "ns\x00"),
        ("step_name", "\x00"),
        ("run_id", "r\x00"),
        ("schema_version", "1\x00"),
    ],
)
def test_it_refuses_nul_in_strings(api: ApiClient, field: str, value: str) -> None:
    body = {"agent_id": "a", "state": {}, field: value}
    assert _field_error(api.post(CPS, body), field) == ["NUL characters are not allowed."]
    assert Checkpoint.objects.count() == 1


@pytest.mark.parametrize("metadata", [{"k": "a\x00"}, {"k\x00": 1}, {"k": ["\x00"]}, {"k": {"j": "\x00"}}])
def test_it_refuses_nul_in_metadata(api: ApiClient, metadata: dict[str, Any]) -> None:
    response = api.post(CPS, {"agent_id": "a", "state": {}, "metadata": metadata})
    assert _field_error(response, "metadata") == ["NUL characters are not allowed in metadata."]


def test_it_accepts_nul_in_state_and_context_and_a_literal_backslash_u0000_in_metadata(
    api: ApiClient,
) -> None:
    body = {
        "agent_id": "a",
        "state": {"s\x00": "\x00"},
        "context": {"c": "\x00"},
        "metadata": {"m": "\\u0000"},
    }
    response = api.post(CPS, body)
    assert response.status_code == 201, response.content
    restored = api.get(f"{CPS}{response.json()['checkpoint_id']}/").json()
    assert (restored["state"], restored["context"], restored["metadata"]) == (
        body["state"],
        body["context"],
        body["metadata"],
    )


def test_it_accepts_a_valid_surrogate_pair(api: ApiClient) -> None:
    response = _raw(api, "post", CPS, b'{"agent_id": "\\ud83d\\ude00", "state": {"e": "\\ud83e\\udd16"}}')
    assert response.status_code == 201, response.content
    assert response.json()["agent_id"] == "😀" and response.json()["state"] == {"e": "🤖"}


def test_it_accepts_an_escaped_backslash_before_u_d800(api: ApiClient) -> None:
    response = _raw(api, "post", CPS, b'{"agent_id": "a", "state": {"path": "C:\\\\ud800"}}')
    assert response.status_code == 201, response.content
    assert response.json()["state"] == {"path": "C:\\ud800"}


WRONG_TYPES: list[tuple[str, Any]] = [
    ("agent_id", 5),
    ("agent_id", None),
    ("agent_id", ""),
    ("agent_id", ["a"]),
    ("step_index", "5"),
    ("step_index", True),
    ("step_index", 1.0),
    ("step_index", 1.5),
    ("step_index", 2**63),
    ("step_name", 5),
    ("run_id", {"a": 1}),
    ("namespace", 0),
    ("framework", "other"),
    ("framework", 1),
    ("schema_version", 1.0),
    ("ttl_seconds", "60"),
    ("ttl_seconds", 60.0),
    ("ttl_seconds", True),
    ("ttl_seconds", 0),
    ("ttl_seconds", -1),
    ("ttl_seconds", 10**12),
    ("pinned", "true"),
    ("pinned", 1),
    ("pinned", None),
    ("context", "x"),
    ("context", []),
    ("metadata", [1]),
    ("metadata", "x"),
    ("state", None),
    ("checksum", "abc"),
    ("checksum", "A" * 64),
    ("checksum", "0" * 63),
    ("checksum", 5),
    ("created_at", "yesterday"),
    ("created_at", "2026-01-01T00:00:00"),
    ("created_at", "2026-01-01"),
    ("created_at", "0001-01-01T00:00:00+01:00"),
    ("created_at", 1767225600),
    ("checkpoint_id", "has space"),
    ("checkpoint_id", "a/b"),
    ("checkpoint_id", ""),
    ("checkpoint_id", "x" * 129),
    ("checkpoint_id", "é"),
    ("checkpoint_id", 5),
    ("parent_id", "a/b"),
    ("parent_id", 5),
    ("parent_id", "missing"),
    # Surrounding whitespace used to be trimmed: " b" was stored as "b", another checkpoint's id.
    ("checkpoint_id", " b"),
    ("checkpoint_id", "\tc"),
    ("checkpoint_id", "e\r\n"),
    ("agent_id", " a"),
    ("agent_id", "a\n"),
    ("agent_id", "   "),
]


@pytest.mark.parametrize(("field", "value"), WRONG_TYPES)
@pytest.mark.parametrize("method_url", [("post", CPS), ("put", "/api/v1/threads/t1/state/")])
def test_it_refuses_wrong_values_naming_the_field(
    api: ApiClient, field: str, value: Any, method_url: tuple[str, str]
) -> None:
    method, url = method_url
    body = {"agent_id": "a", "state": {}, field: value}
    response = getattr(api, method)(url, body)
    if method == "put" and field == "parent_id":
        assert _field_error(response, field) == ["This field is read-only."]
    else:
        assert _field_error(response, field)
    assert Checkpoint.objects.count() == 1


def test_it_refuses_a_missing_state_and_agent(api: ApiClient) -> None:
    error = _error(api.post(CPS, {}))
    assert error["details"]["fields"] == {
        "agent_id": ["This field is required."],
        "state": ["This field is required."],
    }


def test_it_refuses_a_created_at_in_the_future(api: ApiClient) -> None:
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    response = api.post(CPS, {"agent_id": "a", "state": {}, "created_at": future})
    assert _field_error(response, "created_at") == ["Later than the server clock allows."]
    assert Checkpoint.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "non_field_errors"),
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"ttl_seconds": -5}, "ttl_seconds"),
        ({"ttl_seconds": 10**12}, "ttl_seconds"),
        ({"ttl_seconds": "5"}, "ttl_seconds"),
        ({"pinned": "yes"}, "pinned"),
    ],
)
def test_it_refuses_bad_ttl_changes(api: ApiClient, body: dict[str, Any], field: str) -> None:
    assert _field_error(api.post(f"{CPS}c1/ttl/", body), field)
    row = Checkpoint.objects.get(checkpoint_id="c1")
    assert row.expires_at is None and row.pinned is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "target_agent_id"),
        ({"target_agent_id": ""}, "target_agent_id"),
        ({"target_agent_id": "b\x00"}, "target_agent_id"),
        ({"target_agent_id": 5}, "target_agent_id"),
        ({"target_agent_id": "b", "context": [1]}, "context"),
        ({"target_agent_id": "b", "ttl_seconds": 0}, "ttl_seconds"),
    ],
)
def test_it_refuses_bad_handoffs(api: ApiClient, body: dict[str, Any], field: str) -> None:
    assert _field_error(api.post(f"{CPS}c1/handoff/", body), field)
    assert Checkpoint.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"writes": [{"channel": "c", "value": 1}]}, "task_id"),
        ({"task_id": "t", "writes": []}, "writes"),
        ({"task_id": "t", "writes": {"channel": "c"}}, "writes"),
        ({"task_id": "t", "writes": [1]}, "writes"),
        ({"task_id": "t", "writes": [{"value": 1}]}, "writes"),
        ({"task_id": "t", "writes": [{"channel": "c"}]}, "writes"),
        ({"task_id": "t", "writes": [{"channel": "c", "value": 1, "idx": "0"}]}, "writes"),
        ({"task_id": "t", "writes": [{"channel": "c", "value": 1, "idx": 2**31}]}, "writes"),
        ({"task_id": "t", "writes": [{"channel": "c", "value": 1}] * 1001}, "writes"),
        ({"task_id": "t\x00", "writes": [{"channel": "c", "value": 1}]}, "task_id"),
    ],
)
def test_it_refuses_bad_pending_writes(api: ApiClient, body: dict[str, Any], field: str) -> None:
    assert _field_error(api.post(f"{CPS}c1/writes/", body), field)
    assert PendingWrite.objects.count() == 0


def test_it_refuses_an_empty_if_match(api: ApiClient) -> None:
    response = api.put("/api/v1/threads/t1/state/", {"agent_id": "a", "state": {}}, HTTP_IF_MATCH='""')
    assert _field_error(response, "If-Match") == ["Empty."]


def test_it_refuses_different_namespaces_in_body_and_query(api: ApiClient) -> None:
    response = api.post(f"{CPS}?namespace=a", {"agent_id": "a", "state": {}, "namespace": "b"})
    assert _field_error(response, "namespace") == ["The body and ?namespace= name different namespaces."]


@pytest.mark.parametrize("url", GET_ENDPOINTS)
@pytest.mark.parametrize("query", ["namespace=a%00b", "x%00=1", "agent_id=%00"])
def test_it_refuses_nul_in_query_parameters(api: ApiClient, url: str, query: str) -> None:
    error = _error(api.get(f"{url}?{query}"))
    assert error["message"] == "NUL characters are not allowed in query parameters."
    assert list(error["details"]["fields"]) in (["namespace"], ["x\\x00"], ["agent_id"])


@pytest.mark.parametrize(
    "url",
    [*[u for u in GET_ENDPOINTS if u != "/api/v1/checkpoints/c1/"], f"{CPS}c1/ttl/", f"{CPS}c1/handoff/"],
)
def test_it_refuses_an_overlong_namespace(api: ApiClient, url: str) -> None:
    response = (
        api.get(url, {"namespace": "n" * 256})
        if url in GET_ENDPOINTS
        else api.post(f"{url}?namespace={'n' * 256}", {})
    )
    assert _field_error(response, "namespace") == ["namespace is longer than 255 characters."]


@pytest.mark.parametrize("url", LIST_ENDPOINTS)
@pytest.mark.parametrize(
    # Arabic-Indic and full-width digits, an underscore, padding and a sign all passed int() as numbers.
    "limit",
    ["0", "-1", "abc", "501", "1.5", "9" * 5000, "", "\u0665", "\uff15", "1_0", " 5", "+5"],
)
def test_it_refuses_bad_limits(api: ApiClient, url: str, limit: str) -> None:
    response = api.get(url, {"limit": limit})
    assert _field_error(response, "limit")  # empty included: present but empty is not the default


def _cursor(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


BAD_CURSORS = [
    "garbage!",
    "%%%",
    base64.urlsafe_b64encode(b"not json").decode(),
    base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    _cursor([1, 2]),
    _cursor({"p": ["x"], "b": False}),
    _cursor({"p": [True], "b": False}),
    _cursor({"p": [2**70], "b": False}),
    _cursor({"p": [1.5], "b": False}),
    _cursor({"p": [1, 2], "b": False}),
    _cursor({"p": None, "b": False}),
    _cursor({"b": False}),
    base64.urlsafe_b64encode(b"[" * 5000 + b"]" * 5000).decode(),
]


MESSAGES = "/api/v1/threads/t1/messages/"


@pytest.mark.parametrize("url", [CPS, "/api/v1/checkpoints/", MESSAGES])
@pytest.mark.parametrize("cursor", BAD_CURSORS)
def test_it_refuses_bad_cursors(api: ApiClient, url: str, cursor: str) -> None:
    if url == MESSAGES:  # the thread first: a missing one is a 404 whatever the cursor
        appended = api.post(MESSAGES, {"messages": [{"role": "user", "content": "hi"}]})
        assert appended.status_code == 201
    assert _field_error(api.get(url, {"cursor": cursor}), "cursor") == ["Invalid cursor."]


@pytest.mark.parametrize("url", [CPS, "/api/v1/checkpoints/"])
@pytest.mark.parametrize(
    "metadata",
    [
        "{",
        "[1]",
        '"x"',
        "1",
        "null",
        '{"a": NaN}',
        '{"a": 1, "a": 2}',
        '{"a": "\\u0000"}',
        '{"a": "\\ud800"}',
        "[" * 200,
    ],
)
def test_it_refuses_bad_metadata_filters(api: ApiClient, url: str, metadata: str) -> None:
    assert _field_error(api.get(url, {"metadata": metadata}), "metadata")


@pytest.mark.parametrize("url", [CPS, "/api/v1/checkpoints/"])
@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("include_state", "maybe"),
        ("include_tombstones", "2"),
        ("created_after", "yesterday"),
        ("created_before", "2026-13-01"),
        ("framework", "bogus"),
        ("created_after", "0001-01-01T00:00:00+01:00"),
        ("created_before", "9999-12-31T23:59:59-01:00"),
    ],
)
def test_it_refuses_bad_filter_values(api: ApiClient, url: str, param: str, value: str) -> None:
    assert _field_error(api.get(url, {param: value}), param)


def test_it_refuses_an_unknown_before_anchor(api: ApiClient) -> None:
    assert _field_error(api.get(CPS, {"before": "nope"}), "before") == ["No such checkpoint."]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/threads/has%20space/checkpoints/",
        "/api/v1/threads/a%2Fb/state/",
        f"/api/v1/threads/{'x' * 129}/checkpoints/",
        "/api/v1/threads/t1/checkpoints/%C3%A9/",
        "/api/v1/threads/t1/checkpoints/c%001/",
        "/api/v1/checkpoints/bad%20id/",
        "/api/v1/threads/t1/checkpoints/c1/nope/",
    ],
)
def test_it_answers_404_for_ids_that_cannot_exist_in_a_path(api: ApiClient, path: str) -> None:
    for method in ("get", "post", "delete"):
        response = getattr(api, method)(path)
        assert _error(response, 404, "not_found")["message"] == "No such endpoint."


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", f"{CPS}c1/ttl/"),
        ("delete", f"{CPS}c1/ttl/"),
        ("get", f"{CPS}c1/handoff/"),
        ("delete", f"{CPS}c1/diff/"),
        ("post", f"{CPS}c1/diff/"),
        ("delete", f"{CPS}c1/lineage/"),
        ("post", f"{CPS}c1/"),
        ("patch", f"{CPS}c1/"),
        ("put", CPS),
        ("delete", "/api/v1/threads/t1/state/"),
        ("post", "/api/v1/checkpoints/"),
        ("delete", "/api/v1/checkpoints/c1/"),
    ],
)
def test_it_answers_405_for_methods_an_endpoint_does_not_have(api: ApiClient, method: str, url: str) -> None:
    response = getattr(api, method)(url, {})
    _error(response, 405, "method_not_allowed")
    row = Checkpoint.objects.get(checkpoint_id="c1")
    assert row.expired_at is None and row.expires_at is None


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (DjangoValidationError("“x” is not a valid UUID."), 400, "validation_error"),
        (DjangoValidationError({"field": ["Bad."]}), 400, "validation_error"),
        (DataError("value too long"), 400, "validation_error"),
        (IntegrityError("duplicate key"), 409, "conflict"),
        (OperationalError("server closed the connection"), 503, "unavailable"),
    ],
)
def test_it_maps_errors_that_slip_past_validation_to_the_envelope(
    exc: Exception, status: int, code: str
) -> None:
    response = exception_handler(exc, {})
    assert response is not None
    assert response.status_code == status
    assert response.data["error"]["code"] == code


def test_it_leaves_real_bugs_to_django() -> None:
    assert exception_handler(KeyError("bug"), {}) is None


FIELD_NAMES = [
    "agent_id", "state", "context", "metadata", "namespace", "checkpoint_id", "parent_id", "step_index",
    "step_name", "run_id", "framework", "schema_version", "ttl_seconds", "pinned", "checksum", "created_at",
    "target_agent_id", "task_id", "task_path", "writes", "channel", "value", "idx", "type",
]  # fmt: skip
any_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["", "\x00", "c1", "a/b", "2026-01-01T00:00:00Z", "custom", "0" * 64]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
bodies = st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=6), any_json, max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=bodies,
    endpoint=st.sampled_from(BODY_ENDPOINTS),
    query=st.sampled_from(["", "?namespace=", "?namespace=x"]),
)
def test_it_never_answers_500_to_any_json_body(
    api: ApiClient, body: dict[str, Any], endpoint: tuple[str, str, dict[str, Any]], query: str
) -> None:
    method, url, valid = endpoint
    for attempt in (body, {**valid, **body}):
        response = _raw(api, method, f"{url}{query}", json.dumps(attempt).encode())
        assert response.status_code in (200, 201, 400, 404, 409, 410, 412), response.content
        if response.status_code >= 400:
            assert set(response.json()["error"]) == {"code", "message", "details"}


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/v1/threads/", {"thread_id": " t2"}, "thread_id"),
        ("/api/v1/threads/", {"thread_id": "t2\r\n"}, "thread_id"),
        ("/api/v1/threads/", {"thread_id": "t2", "user_id": " alice"}, "user_id"),
        ("/api/v1/threads/t1/messages/", {"messages": [{"message_id": "\tm", "role": "user"}]}, "messages"),
        (f"{CPS}c1/handoff/", {"target_agent_id": "b "}, "target_agent_id"),
    ],
)
def test_it_refuses_ids_with_surrounding_whitespace_instead_of_trimming_them(
    api: ApiClient, url: str, body: dict[str, Any], field: str
) -> None:
    response = api.post(url, body)
    assert _field_error(response, field), response.json()
    assert _stored() == (1, 0, 1)


@pytest.mark.parametrize("query", ["after_seq=\u0665", "before_seq=\uff11\uff10", "after_seq=1_0"])
def test_it_refuses_numbers_written_in_other_digits(api: ApiClient, query: str) -> None:
    response = api.get(f"/api/v1/threads/t1/messages/?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"


@pytest.mark.parametrize("name", ["after_seq", "before_seq"])
def test_it_refuses_a_number_parameter_that_is_present_but_empty(api: ApiClient, name: str) -> None:
    # Found by schemathesis: `?before_seq=` was read as "no filter" and answered 200.
    response = api.get(f"/api/v1/threads/t1/messages/?{name}=")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"] == {
        name: ["Enter a whole number, or leave the parameter out."]
    }


def test_it_refuses_a_user_id_query_with_surrounding_whitespace(api: ApiClient) -> None:
    # A save with ?user_id= gives a new thread to that user: " alice" would have been another user.
    response = api.post("/api/v1/threads/t9/checkpoints/?user_id=%20alice", {"agent_id": "a", "state": {}})
    assert _field_error(response, "user_id") == ["user_id has leading or trailing whitespace."]
    assert _stored() == (1, 0, 1)
