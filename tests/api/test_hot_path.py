"""The hot path (`checkpoints.api.hot_path`): what it answers below the URL resolver and DRF's dispatch (a
save, a restore, the head, a new head, the timeline, LangGraph's put, put_writes and list, a message
append) is the answer the whole stack gives, byte for byte and header for header, for every request it
takes and every one it passes on; it answers only successes, runs no write twice, and a key is counted once
however a request is answered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.db import OperationalError
from django.test import override_settings
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from checkpoints.api.hot_path import HOT_ROUTES, HotPathMiddleware, HotRoute
from checkpoints.api.views import checkpoints as checkpoint_views
from checkpoints.models import ApiKey, Checkpoint, Message, PendingWrite
from checkpoints.storage.api_key_cache import api_keys_forget
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

HOT = f"{HotPathMiddleware.__module__}.{HotPathMiddleware.__name__}"
CPS = "/api/v1/threads/t1/checkpoints/"
MESSAGES = "/api/v1/threads/t3/messages/"


def _middleware(*, hot: bool) -> list[str]:
    return settings.MIDDLEWARE if hot else [name for name in settings.MIDDLEWARE if name != HOT]


def _served(
    secret: str | None,
    path: str,
    *,
    hot: bool,
    method: str = "GET",
    body: str | bytes = b"",
    content_type: str = "application/json",
    **extra: Any,
) -> tuple[int, list[Any], bytes]:
    """Status, headers (sorted) and body of one request, with or without the hot path in the middleware."""
    with override_settings(MIDDLEWARE=_middleware(hot=hot)):
        client = APIClient()  # a new handler: it loads the middleware in force
        if secret is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        response = client.generic(method, path, body, content_type, **extra)  # type: ignore[arg-type]  # bytes too
    return response.status_code, sorted(response.items()), response.content


def _same_both_ways(secret: str | None, path: str, **extra: Any) -> tuple[int, list[Any], bytes]:
    with_hot = _served(secret, path, hot=True, **extra)
    assert with_hot == _served(secret, path, hot=False, **extra)
    return with_hot


def _answered_hot_as_whole(
    secret: str, path: str, drf_ran: list[str], **extra: Any
) -> tuple[int, list[Any], bytes]:
    """The hot path's answer (DRF not entered), then the same request's without it: equal."""
    del drf_ran[:]
    with_hot = _served(secret, path, hot=True, **extra)
    assert drf_ran == []
    assert _served(secret, path, hot=False, **extra) == with_hot
    return with_hot


@pytest.fixture
def drf_ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The requests DRF's dispatch of the hot views ran for (method and full path)."""
    ran: list[str] = []
    for view_class in {route.view_class for route in HOT_ROUTES}:
        monkeypatch.setattr(view_class, "initial", _recorded(view_class.initial, ran))
    return ran


def _recorded(initial: Callable[..., None], ran: list[str]) -> Callable[..., None]:
    def recorded(view: Any, request: Any, *args: Any, **kwargs: Any) -> None:
        ran.append(f"{request.method} {request.get_full_path()}")
        initial(view, request, *args, **kwargs)

    return recorded


def test_the_hot_path_is_installed_innermost() -> None:
    assert settings.MIDDLEWARE[-1] == HOT


def test_a_restore_is_the_whole_stacks_answer(api: ApiClient, drf_ran: list[str]) -> None:
    saved = make_checkpoint(api.workspace, "t1", state={"messages": ["hi", "é😀"], "n": 1}, metadata={"m": 1})
    for accept in ({}, {"HTTP_ACCEPT": "*/*"}, {"HTTP_ACCEPT": "application/json"}):
        path = f"{CPS}{saved.checkpoint_id}/"
        status, headers, body = _answered_hot_as_whole(api.secret, path, drf_ran, **accept)
        assert status == 200
        assert ("X-Checksum-Verified", "true") in headers
        assert ("Allow", "GET, DELETE, HEAD, OPTIONS") in headers
        assert ("X-Frame-Options", "DENY") in headers  # the middleware outside it still runs
        assert b'"state":{"messages":["hi","\xc3\xa9\xf0\x9f\x98\x80"],"n":1}' in body


def test_it_answers_without_the_resolver_or_drf(api: ApiClient, drf_ran: list[str]) -> None:
    saved = make_checkpoint(api.workspace, "t1")
    path = f"{CPS}{saved.checkpoint_id}/"
    assert api.get(path).status_code == 200
    assert api.get(path, {"namespace": "", "user_id": ""}).status_code == 200  # t1 has no user
    assert api.get(path, {"user_id": "someone"}).status_code == 404  # another user's thread
    assert api.post(f"{CPS}?include_state=false", {"agent_id": "a", "state": {}}).status_code == 201
    assert drf_ran == [f"GET {path}?user_id=someone"]  # passed on: the 404 is DRF's


def test_a_save_is_the_whole_stacks_answer(api: ApiClient, drf_ran: list[str]) -> None:
    for n, query in enumerate(("", "?include_state=false", "?include_state=true&namespace=sub&user_id=u1")):
        path = f"/api/v1/threads/t{n}/checkpoints/{query}"
        body = json.dumps({"checkpoint_id": "c1", "agent_id": "a", "state": {"m": ["hi", "é"]}})
        status, headers, created = _served(api.secret, path, hot=True, method="POST", body=body)
        assert status == 201, created
        assert drf_ran == []
        for hot in (True, False):  # an identical retry is answered with the stored checkpoint, both ways
            assert _served(api.secret, path, hot=hot, method="POST", body=body) == (200, headers, created)
        assert drf_ran == [f"POST {path}"]  # the second retry, without the hot path
        drf_ran.clear()
    assert dict(headers)["Allow"] == "GET, POST, HEAD, OPTIONS"
    assert dict(headers)["Location"] == "/api/v1/threads/t2/checkpoints/c1/?namespace=sub"
    assert b'"state"' in created


def test_a_save_whatever_its_content_type_says_is_the_whole_stacks_answer(
    api: ApiClient, drf_ran: list[str]
) -> None:
    # The API reads every body as JSON (`curl -d` sends a form type): so does the hot path.
    for n, content_type in enumerate(("application/x-www-form-urlencoded", "text/plain", "application/json")):
        body = json.dumps({"checkpoint_id": f"c{n}", "agent_id": "a", "state": {}})
        answers = []
        for hot in (True, False):
            answers.append(
                _served(api.secret, CPS, hot=hot, method="POST", body=body, content_type=content_type)
            )
        assert answers[0][0] == 201 and answers[1][0] == 200  # the second is the identical retry
        assert answers[0][1:] == answers[1][1:]
    assert drf_ran == [f"POST {CPS}"] * 3  # only the runs without the hot path


def test_the_head_the_timeline_and_langgraphs_reads_are_the_whole_stacks_answers(
    api: ApiClient, drf_ran: list[str]
) -> None:
    for n in range(3):
        make_checkpoint(api.workspace, "t1", checkpoint_id=f"c{n}", state={"n": n}, run_id="r1")
        graph_step = {"checkpoint_id": f"g{n}", "agent_id": "graph", "state": {"channel_values": {"n": n}}}
        assert api.post("/api/v1/langgraph/threads/t2/checkpoints/", graph_step).status_code == 201
    make_checkpoint(api.workspace, "t1", checkpoint_id="s0", namespace="sub", state={"s": 0})
    messages = [{"role": role, "content": f"{role} é"} for role in ("user", "assistant", "user")]
    assert api.post(f"{MESSAGES}?user_id=u", {"messages": messages}).status_code == 201
    first_page = _answered_hot_as_whole(api.secret, f"{CPS}?limit=2", drf_ran)[2]
    next_page = json.loads(first_page)["next"].removeprefix("http://testserver")
    first_messages = _answered_hot_as_whole(api.secret, f"{MESSAGES}?limit=2&user_id=u", drf_ran)[2]
    next_messages = json.loads(first_messages)["next"].removeprefix("http://testserver")
    lg = "/api/v1/langgraph/checkpoints/"
    for path in (
        "/api/v1/threads/t1/state/",
        "/api/v1/threads/t1/state/?namespace=sub&user_id=",
        CPS,
        f"{CPS}?limit=2&include_state=true&agent_id=agent-1",
        next_page,
        f"{lg}?thread_id=t2&namespace=&limit=1",
        f"{lg}?thread_id=t2&namespace=&checkpoint_id=g1",
        f"{lg}?thread_id=t2&before=g2",
        MESSAGES,
        next_messages,
        f"{MESSAGES}?role=user&after_seq=1",
    ):
        status, headers, body = _answered_hot_as_whole(api.secret, path, drf_ran)
        assert status == 200, body
        assert any(name == "Allow" for name, _ in headers)
        assert json.loads(body).get("results", True), path  # every page here holds something
    assert json.loads(_served(api.secret, f"{lg}?thread_id=t2&limit=1", hot=True)[2])["next"]


def test_a_new_head_langgraphs_writes_and_messages_are_the_whole_stacks_answers(
    api: ApiClient, drf_ran: list[str]
) -> None:
    state = "/api/v1/threads/t1/state/"
    writes = f"{CPS}h1/writes/"
    requests: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
        ("PUT", state, {"checkpoint_id": "h1", "agent_id": "a", "state": {"n": 1}}, {}),
        ("PUT", f"{state}?include_state=false", {"checkpoint_id": "h2", "agent_id": "a", "state": {}}, {}),
        ("PUT", state, {"checkpoint_id": "h3", "agent_id": "a", "state": {}}, {"HTTP_IF_MATCH": '"h2"'}),
        ("POST", "/api/v1/langgraph/threads/t2/checkpoints/", {"checkpoint_id": "g1", "agent_id": "graph",
                                                             "state": {"channel_values": {"m": [1]}}}, {}),
        ("POST", writes, {"task_id": "task", "writes": [{"channel": "a", "value": {"x": 1}}]}, {}),
        ("POST", "/api/v1/threads/t3/messages/", {"messages": [{"message_id": "m1", "role": "user",
                                                               "content": "hi é"}]}, {}),
    ]  # fmt: skip
    for method, path, body, headers in requests:
        answers = []
        for hot in (True, True, False):  # the first one writes; the two retries are answered as stored
            answers.append(
                _served(api.secret, path, hot=hot, method=method, body=json.dumps(body), **headers)
            )
        assert answers[0][0] == 201, answers[0][2]
        assert drf_ran == [f"{method} {path}"]  # only the run without the hot path
        assert answers[1][1:] == answers[2][1:] == answers[0][1:]
        del drf_ran[:]


def _count_saved() -> int:
    return Checkpoint.objects.count()


# Bodies and queries the API refuses: the hot path passes each on, DRF answers it, nothing is stored.
REFUSED_SAVES: list[tuple[str, str, bytes]] = [
    ("malformed JSON", "", b'{"agent_id": "a", "state": {}'),
    ("an unknown field", "", b'{"agent_id": "a", "state": {}, "bogus": 1}'),
    ("a wrong type", "", b'{"agent_id": 1, "state": {}}'),
    ("a duplicate key", "", b'{"agent_id": "a", "agent_id": "b", "state": {}}'),
    ("a NUL in a text field", "", b'{"agent_id": "a\\u0000", "state": {}}'),
    ("a lone surrogate", "", b'{"agent_id": "a", "state": {"x": "\\ud800"}}'),
    ("too deep", "", b'{"agent_id": "a", "state": ' + b"[" * 300 + b"]" * 300 + b"}"),
    ("not an object", "", b"[]"),
    ("no body", "", b""),
    ("a body of spaces", "", b"   "),
    ("an existing id, other content", "", b'{"checkpoint_id": "taken", "agent_id": "a", "state": {"n": 2}}'),
    ("an unknown parent", "", b'{"parent_id": "nope", "agent_id": "a", "state": {}}'),
    ("include_state=maybe", "?include_state=maybe", b'{"agent_id": "a", "state": {}}'),
    ("an unknown parameter", "?agnet_id=a", b'{"agent_id": "a", "state": {}}'),
    ("two namespaces", "?namespace=b", b'{"agent_id": "a", "state": {}, "namespace": "a"}'),
    ("another user's thread", "?user_id=u2", b'{"agent_id": "a", "state": {}}'),
]
# The same, for the other hot writes.
REFUSED_WRITES: list[tuple[str, str, bytes, dict[str, Any]]] = [
    ("PUT", "state/", b'{"agent_id": "a", "state": {}}', {"HTTP_IF_MATCH": '"not-the-head"'}),
    ("PUT", "state/", b'{"agent_id": "a", "state": {}}', {"HTTP_IF_MATCH": " , "}),
    ("PUT", "state/", b'{"agent_id": "a", "state": {}, "parent_id": "taken"}', {}),
    ("POST", "checkpoints/taken/writes/", b'{"task_id": "t", "writes": [{"channel": 1}]}', {}),
    ("POST", "checkpoints/taken/writes/?user_id=u2", b'{"task_id": "t", "writes": []}', {}),
    ("POST", "messages/", b'{"messages": []}', {}),
    ("POST", "messages/", b'{"messages": [{"role": "nobody", "content": "x"}]}', {}),
    ("POST", "messages/?user_id=u2", b'{"messages": [{"role": "user", "content": "x"}]}', {}),
]


@pytest.mark.parametrize(("case", "query", "body"), REFUSED_SAVES, ids=[case for case, _, _ in REFUSED_SAVES])
def test_every_refused_save_is_drfs_own_and_stores_nothing(
    api: ApiClient, case: str, query: str, body: bytes
) -> None:
    make_checkpoint(api.workspace, "t1", checkpoint_id="taken", state={"n": 1})  # t1: a thread without a user
    before = _count_saved()
    status, _, answer = _same_both_ways(api.secret, f"{CPS}{query}", method="POST", body=body)
    assert 400 <= status < 500, answer
    assert json.loads(answer)["error"]["code"]
    assert _count_saved() == before


def test_a_save_that_fails_is_answered_by_drf_and_not_run_again(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[str] = []

    def unavailable(**arguments: Any) -> None:
        attempts.append(arguments["thread_id"])
        raise OperationalError("the server closed the connection unexpectedly")

    monkeypatch.setattr(checkpoint_views, "checkpoint_save", unavailable)
    body = json.dumps({"agent_id": "a", "state": {}})
    status, headers, answer = _same_both_ways(api.secret, CPS, method="POST", body=body)
    assert attempts == ["t1", "t1"]  # once with the hot path, once without
    assert status == 503
    assert json.loads(answer)["error"]["code"] == "unavailable"
    assert ("Allow", "GET, POST, HEAD, OPTIONS") in headers


@pytest.mark.parametrize(("method", "path", "body", "headers"), REFUSED_WRITES)
def test_every_refused_write_is_drfs_own_and_stores_nothing(
    api: ApiClient, method: str, path: str, body: bytes, headers: dict[str, Any]
) -> None:
    make_checkpoint(api.workspace, "t1", checkpoint_id="taken", state={"n": 1})
    before = (_count_saved(), PendingWrite.objects.count(), Message.objects.count())
    answers = []
    for hot in (True, False):
        answers.append(
            _served(api.secret, f"/api/v1/threads/t1/{path}", hot=hot, method=method, body=body, **headers)
        )
    assert answers[0] == answers[1]
    assert 400 <= answers[0][0] < 500, answers[0][2]
    assert (_count_saved(), PendingWrite.objects.count(), Message.objects.count()) == before


def _tombstone(api: ApiClient) -> str:
    saved = make_checkpoint(api.workspace, "t1", checkpoint_id="gone")
    Checkpoint.objects.filter(pk=saved.pk).update(expired_at=timezone.now())
    return f"{CPS}gone/"


def _tampered(api: ApiClient) -> str:
    saved = make_checkpoint(api.workspace, "t1", checkpoint_id="altered")
    Checkpoint.objects.filter(pk=saved.pk).update(agent_id="mallory")
    return f"{CPS}altered/"


def _ambiguous(api: ApiClient) -> str:
    make_checkpoint(api.workspace, "t1", checkpoint_id="twice")
    make_checkpoint(api.workspace, "t1", checkpoint_id="twice", namespace="sub")
    return f"{CPS}twice/"


def _other_workspaces(api: ApiClient, other_api: ApiClient) -> str:
    theirs = make_checkpoint(other_api.workspace, "t1", checkpoint_id="theirs")
    return f"{CPS}{theirs.checkpoint_id}/"


def _messages(api: ApiClient) -> str:
    assert api.post(f"{MESSAGES}?user_id=u", {"messages": [{"role": "user"}]}).status_code == 201
    return MESSAGES


# Requests the hot path passes on (each to an error DRF words), and the status DRF gives.
PASSED_ON: list[tuple[str, Callable[..., str], int]] = [
    ("unknown checkpoint", lambda api, other: f"{CPS}nope/", 404),
    ("unknown thread", lambda api, other: "/api/v1/threads/nope/checkpoints/nope/", 404),
    ("another workspace's id", _other_workspaces, 404),
    ("expired", lambda api, other: _tombstone(api), 410),
    ("altered after saving", lambda api, other: _tampered(api), 409),
    ("one id in two namespaces", lambda api, other: _ambiguous(api), 409),
    ("an unknown thread's messages", lambda api, other: MESSAGES, 404),
    ("another user's messages", lambda api, other: f"{_messages(api)}?user_id=someone-else", 404),
    ("a message filter's bad value", lambda api, other: f"{_messages(api)}?after_seq=one", 400),
    ("a message filter present but empty", lambda api, other: f"{_messages(api)}?role=", 400),
]


@pytest.mark.parametrize(("case", "path_of", "expected"), PASSED_ON, ids=[case for case, _, _ in PASSED_ON])
def test_every_refusal_is_drfs_own(
    api: ApiClient, other_api: ApiClient, case: str, path_of: Callable[..., str], expected: int
) -> None:
    path = path_of(api, other_api)
    status, headers, body = _same_both_ways(api.secret, path)
    assert status == expected, body
    assert body.startswith(b'{"error":{"code":')
    assert ("Content-Type", "application/json") in headers or any(
        name == "Content-Type" and value.startswith("application/json") for name, value in headers
    )


def test_a_request_with_the_wrong_credentials_is_drfs_401(api: ApiClient) -> None:
    path = f"{CPS}{make_checkpoint(api.workspace, 't1').checkpoint_id}/"
    for secret in (None, "cairn_nope_nope", "x" * 40):
        status, _, body = _same_both_ways(secret, path)
        assert status == 401, body
    for header in ("Basic abc", "Bearer", "Bearer a b", "Bearer \u00e9t\u00e9"):
        with_hot = APIClient().get(path, HTTP_AUTHORIZATION=header)
        assert with_hot.status_code == 401
        with override_settings(MIDDLEWARE=_middleware(hot=False)):
            without = APIClient().get(path, HTTP_AUTHORIZATION=header)
        assert with_hot.content == without.content


def test_a_revoked_key_is_refused_at_once(api: ApiClient) -> None:
    path = f"{CPS}{make_checkpoint(api.workspace, 't1').checkpoint_id}/"
    assert api.get(path).status_code == 200
    api.key.revoked_at = timezone.now()
    api.key.save(update_fields=["revoked_at"])
    status, _, body = _same_both_ways(api.secret, path)
    assert status == 401, body


@pytest.mark.parametrize(
    "extra",
    [
        {"HTTP_ACCEPT": "text/html"},
        {"HTTP_ACCEPT": "application/json, text/plain"},
        {"QUERY_STRING": "format=json"},
        {"QUERY_STRING": "namespace="},
        {"QUERY_STRING": "user_id=someone"},
        {"QUERY_STRING": "unknown=1"},
    ],
    ids=lambda extra: next(iter(extra.values())),
)
def test_other_headers_and_queries_go_through_drf(api: ApiClient, extra: dict[str, str]) -> None:
    path = f"{CPS}{make_checkpoint(api.workspace, 't1').checkpoint_id}/"
    status, _, body = _same_both_ways(api.secret, path, **extra)
    assert status in (200, 400, 404, 406), body


def test_a_key_is_counted_once_whoever_answers(api: ApiClient) -> None:
    saved = make_checkpoint(api.workspace, "t1")
    ApiKey.objects.filter(pk=api.key.pk).update(throttle_rate="3/min")
    api_keys_forget()
    assert api.get(f"{CPS}nope/").status_code == 404  # passed on to DRF after the key was counted
    assert api.get(f"{CPS}{saved.checkpoint_id}/").status_code == 200  # the hot path's
    assert api.get(f"{CPS}{saved.checkpoint_id}/").status_code == 200
    refused = api.get(f"{CPS}{saved.checkpoint_id}/")  # the fourth in the window: DRF's 429
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "throttled"
    assert int(refused["Retry-After"]) >= 1


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/threads/t1/checkpoints/c1/",
        "/api/v1/threads/a.b:c-d_e/checkpoints/X.Y:Z-0_9/",
        f"/api/v1/threads/{'t' * 128}/checkpoints/{'c' * 128}/",
        f"/api/v1/threads/{'t' * 129}/checkpoints/c/",
        "/api/v1/threads/t1/checkpoints/c1",
        "/api/v1/threads/t1/checkpoints/c1/ttl/",
        "/api/v1/threads/t1/checkpoints/",
        "/api/v1/threads/t1/checkpoints",
        "/api/v1/threads//checkpoints/",
        "/api/v1/threads/t 1/checkpoints/c1/",
        "/api/v1/threads/t%2F1/checkpoints/c1/",
        "/api/v1/threads/t/1/checkpoints/",
        "/api/v1/threads/t1/checkpoints/c1/\n",
        "/api/v1/threads/t1/checkpoints/\n",
        "/api/v1//threads/t1/checkpoints/c1/",
        "/api/v2/threads/t1/checkpoints/c1/",
        "/api/v1/langgraph/threads/t1/checkpoints/",
        "/api/v1/threads/t1/messages/",
        "/api/v1/threads/t1/messages/m1/",
        "/dashboard/threads/t1/checkpoints/c1/",
    ],
)
def test_each_route_is_the_one_django_resolves(path: str) -> None:
    try:
        match = resolve(path)
        resolved = (match.view_name, match.kwargs)
    except Resolver404:
        resolved = None
    for route in HOT_ROUTES:
        found = route.pattern.match(path)
        expected = (route.name, found.groupdict()) if found else None
        assert (resolved if resolved and resolved[0] == route.name else None) == expected


@pytest.mark.parametrize("route", HOT_ROUTES, ids=lambda route: route.name)
def test_each_route_is_served_by_the_view_django_resolves_it_to(route: HotRoute) -> None:
    path = reverse(route.name, kwargs=dict.fromkeys(route.ids, "x"))
    assert route.pattern.match(path)
    assert route.view_class is resolve(path).func.view_class  # type: ignore[attr-defined]
