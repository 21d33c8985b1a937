"""`after_response`: work queued during a request runs once its response is closed (what the server does
after sending the last byte), in order, a failure logged and not raised; outside a request it runs at once.
And the head cache it fills: a `GET state/` answers before the head is cached, then the next read hits."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.utils import timezone

from checkpoints.after_response import after_response
from checkpoints.models import Thread
from checkpoints.storage.state_cache import head_cache_get
from tests.conftest import ApiClient


def test_outside_a_request_the_work_runs_at_once() -> None:
    done: list[str] = []
    after_response(lambda: done.append("now"))
    assert done == ["now"]


@pytest.mark.django_db  # request_started also checks the database connection
def test_during_a_request_the_work_waits_for_the_response_to_close(caplog: pytest.LogCaptureFixture) -> None:
    done: list[str] = []

    def fail() -> None:
        raise RuntimeError("cache down")

    request_started.send(sender=None)
    after_response(lambda: done.append("first"))
    after_response(fail)
    after_response(lambda: done.append("second"))
    assert done == []
    with caplog.at_level(logging.ERROR, logger="checkpoints.after_response"):
        request_finished.send(sender=None)
    assert done == ["first", "second"]
    assert "work after the response failed" in caplog.text
    after_response(lambda: done.append("after"))  # the request is over: at once again
    assert done == ["first", "second", "after"]


@pytest.mark.django_db
def test_a_head_read_caches_the_head_only_once_its_response_is_closed(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Callable[..., Any]
) -> None:
    cache.clear()
    response = api.post("/api/v1/threads/t1/checkpoints/", {"agent_id": "a", "state": {"n": 1}})
    assert response.status_code == 201, response.json()
    thread = Thread.objects.get(workspace=api.workspace, thread_id="t1")
    assert head_cache_get(thread, "", timezone.now()) is None  # a save writes no cache entry

    seen_before_close: list[Any] = []
    original_close = type(response).close

    def close(self: Any) -> None:
        seen_before_close.append(head_cache_get(thread, "", timezone.now()))
        original_close(self)

    monkeypatch.setattr(type(response), "close", close)
    state = api.get("/api/v1/threads/t1/state/")
    assert state.status_code == 200, state.json()
    assert seen_before_close == [None]  # the response was complete before the head was cached
    cached = head_cache_get(thread, "", timezone.now())
    assert cached is not None and cached.checkpoint_id == state.json()["checkpoint_id"]
