"""The hot requests leave nothing for Python's cycle collector: reference counting frees each request's
objects as soon as the response is sent (docs/performance.md). Served through the WSGI application as
gunicorn drives it (body read, response closed), not the test client, whose own bookkeeping makes cycles."""

from __future__ import annotations

import gc
import json
from collections import Counter
from collections.abc import Iterator

import pytest
from django.core.handlers.wsgi import WSGIHandler

from checkpoints.bench.profiling import environ, serve_one
from tests.conftest import ApiClient

# Outside a test transaction: the WSGI handler closes a connection it finds inside one (the test client
# switches that off; this test serves requests as gunicorn does).
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def collector_paused() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
        gc.collect()


def cyclic_garbage() -> Counter[str]:
    """The objects only the collector could free, by type (none: reference counting freed everything)."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = Counter(type(o).__qualname__ for o in gc.garbage)
    gc.set_debug(0)
    gc.garbage.clear()
    gc.collect()  # now free them: otherwise the next look would find them again
    return found


# Not here: filtered list pages (django-filter's forms; a page without filters builds none), bodies DRF's
# serializers refuse, and an ORM query with `select_related` (Django's compiler leaves a recursive closure).
def test_hot_requests_and_their_errors_leave_no_cycles(api: ApiClient, collector_paused: None) -> None:
    app = WSGIHandler()
    saved = api.post("/api/v1/threads/t1/checkpoints/", {"state": {"n": 1}, "agent_id": "a"}, format="json")
    checkpoint = f"/api/v1/threads/t1/checkpoints/{saved.json()['checkpoint_id']}/"
    requests = [
        ("POST", "/api/v1/threads/t1/checkpoints/", {"state": {"n": 2}, "agent_id": "a"}, "201 Created"),
        ("GET", checkpoint, None, "200 OK"),
        ("GET", "/api/v1/threads/t1/state/", None, "200 OK"),
        (
            "POST",
            "/api/v1/threads/t1/messages/",
            {"messages": [{"role": "user", "content": "hi"}]},
            "201 Created",
        ),
        (
            "POST",
            f"{checkpoint}writes/",
            {"task_id": "a", "writes": [{"channel": "c", "value": 1}]},
            "201 Created",
        ),
        ("GET", "/api/v1/threads/t1/checkpoints/", None, "200 OK"),
        ("GET", "/api/v1/threads/t1/messages/", None, "200 OK"),
        ("GET", "/api/v1/threads/t1/checkpoints/missing/", None, "404 Not Found"),
        ("GET", checkpoint, {"unknown": "parameter"}, "400 Bad Request"),
    ]
    for _ in range(2):  # the first pass also fills this process's caches (compiled checks, the key)
        cyclic_garbage()
        for method, path, body, expected in requests:
            query = "unknown=parameter" if body == {"unknown": "parameter"} else ""
            encoded = b"" if body is None or query else json.dumps(body).encode()
            status, _headers, answer = serve_one(
                app, environ(method, path, api.secret, query=query, body=encoded)
            )
            assert status == expected, answer
    assert cyclic_garbage() == Counter()


class Node:
    def __init__(self) -> None:
        self.me = self


def test_the_check_sees_a_cycle(collector_paused: None) -> None:
    cyclic_garbage()
    Node()
    assert cyclic_garbage()["Node"] == 1
    assert cyclic_garbage()["Node"] == 0  # found once, then freed
