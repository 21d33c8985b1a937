"""Bodies written as JSON text (`json_scalar`, `json_object`, `json_array`) are what the renderer would write
for the same values, byte for byte, a body already written is rendered as it is, and `written_response` and
`KeysetPage.written` answer what DRF's `Response` answers for the same body or page."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.http import HttpResponse
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from checkpoints.api.pagination import KeysetPage
from checkpoints.api.renderers import (
    CairnJSONRenderer,
    RawJSON,
    json_array,
    json_object,
    json_scalar,
    written_response,
)
from checkpoints.models import Checkpoint, Thread

RENDERER = CairnJSONRenderer()
# What a checkpoint's scalars hold: text of any kind (quotes, backslashes, control characters, U+2028 and
# U+2029, astral characters), integers of any size, booleans and null.
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text())


def _rendered(value: Any) -> bytes:
    return RENDERER.render(value, "application/json", {})


@given(SCALARS)
def test_a_scalar_is_written_as_the_renderer_writes_it(value: Any) -> None:
    # Inside a body: a body of None alone is empty (DRF), which no member is.
    assert f"[{json_scalar(value)}]".encode() == _rendered([value])


@pytest.mark.parametrize(
    "value", ["line\u2028separator", "para\u2029graph", 'q"uote\\', "\x00\x1f\x7f", "é€😀"]
)
def test_the_characters_json_escapes_specially(value: str) -> None:
    assert f"[{json_scalar(value)}]".encode() == _rendered([value])
    assert json.loads(json_scalar(value)) == value


@given(st.dictionaries(st.text(), SCALARS))
def test_an_object_is_what_the_renderer_writes_for_the_same_dict(members: dict[str, Any]) -> None:
    written = json_object((name, json_scalar(value)) for name, value in members.items())
    assert written.encode("utf-8") == _rendered(members)
    assert list(json.loads(written)) == list(members)  # members in the order given


def test_stored_text_is_spliced_into_an_object_and_an_array_as_it_is() -> None:
    stored = '{"z":1,"a":[1.50,"\u2028"]}'  # as stored: not re-encoded, so 1.50 and the raw U+2028 stay
    body = json_object([("state", stored), ("n", json_scalar(3))])
    assert body == '{"state":' + stored + ',"n":3}'
    assert json_array([body, "null"]) == "[" + body + ",null]"
    assert _rendered({"results": [RawJSON(body)]}) == ('{"results":[' + body + "]}").encode("utf-8")


def test_a_body_already_written_is_rendered_as_it_is() -> None:
    body = json_object([("thread_id", json_scalar("t")), ("state", '{"k":"v"}')])
    assert _rendered(body) == b'{"thread_id":"t","state":{"k":"v"}}'
    assert RENDERER.render(body, "application/json; indent=4", {}) == body.encode("utf-8")


class _Answer(APIView):
    """Answers the body it is given, through DRF's Response or as `written_response`."""

    authentication_classes: list[type] = []
    permission_classes: list[type] = []
    throttle_classes: list[type] = []
    body = RawJSON("{}")
    written = False

    def get(self, request: Any) -> HttpResponse:
        headers = {"ETag": '"c1"', "Location": "/api/v1/x/"}
        if self.written:
            return written_response(self.body, 201, headers=headers)
        return Response(self.body, status=201, headers=headers)


@pytest.mark.parametrize("accept", [None, "application/json", "*/*", "application/json; indent=4"])
def test_a_written_response_is_what_drf_answers_for_the_same_body(accept: str | None) -> None:
    body = json_object([("thread_id", json_scalar("t\u2028é")), ("state", '{"k":[1.50,"😀"]}')])
    extra: dict[str, Any] = {} if accept is None else {"HTTP_ACCEPT": accept}
    answers = []
    for written in (False, True):
        view = _Answer.as_view(body=body, written=written)
        response = view(APIRequestFactory().get("/api/v1/x/", data=None, **extra))
        if isinstance(response, Response):
            response.render()
        answers.append((response.status_code, response.content, sorted(response.items())))
    assert answers[0] == answers[1]
    assert answers[1][1] == body.encode("utf-8")
    assert ("Content-Type", "application/json; charset=utf-8") in answers[1][2]


def test_only_json_scalars_are_written() -> None:
    with pytest.raises(TypeError):
        json_scalar(1.5)  # type: ignore[arg-type]


def _page(url: str, thread: Thread) -> tuple[KeysetPage, list[RawJSON]]:
    page = KeysetPage(
        Request(APIRequestFactory().get(url)), Checkpoint.objects.filter(thread=thread), ["-id"]
    )
    return page, [json_object([("checkpoint_id", json_scalar(c.checkpoint_id))]) for c in page.results]


@pytest.mark.django_db
def test_a_written_page_is_the_rendered_envelope(workspace: Any) -> None:
    thread = Thread.objects.create(workspace=workspace, thread_id="t")
    for step in range(3):
        Checkpoint.objects.create(workspace=workspace, thread=thread, checkpoint_id=f"c{step}", state="{}")
    first, results = _page("/api/v1/threads/t/checkpoints/?limit=2&q=%22%E2%80%A8", thread)
    assert first.next is not None and first.previous is None
    assert first.written(results).content == _rendered(first.envelope(results))
    second, results = _page(first.next, thread)
    assert second.previous is not None and len(results) == 1
    assert second.written(results).content == _rendered(second.envelope(results))
    whole, results = _page("/api/v1/threads/t/checkpoints/", thread)
    assert whole.written(results).content == _rendered(whole.envelope(results))
