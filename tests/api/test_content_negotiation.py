"""Content negotiation (docs/performance.md): the plain Accept headers agents send are answered without
DRF's parsing, with exactly DRF's answer; every other request still goes through DRF's negotiation."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from checkpoints.api.negotiation import CairnContentNegotiation
from checkpoints.api.renderers import CairnJSONRenderer
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

ACCEPT_HEADERS = [
    None,
    "*/*",
    "application/json",
    "application/json; indent=4",
    "application/*",
    "text/html, application/json;q=0.9",
    "",
]


def _request(accept: str | None, query: str = "") -> Request:
    headers: dict[str, Any] = {} if accept is None else {"HTTP_ACCEPT": accept}
    return Request(APIRequestFactory().get(f"/api/v1/threads/{query}", **headers))


@pytest.mark.parametrize("accept", ACCEPT_HEADERS)
@pytest.mark.parametrize(
    "renderers", [[CairnJSONRenderer()], [CairnJSONRenderer(), BrowsableAPIRenderer()]], ids=["json", "two"]
)
def test_it_answers_as_drf_does(accept: str | None, renderers: list[BaseRenderer]) -> None:
    def outcome(negotiation: DefaultContentNegotiation) -> tuple[Any, ...]:
        try:
            renderer, media_type = negotiation.select_renderer(_request(accept), renderers)
        except NotAcceptable:
            return ("406",)
        return type(renderer), media_type

    assert outcome(CairnContentNegotiation()) == outcome(DefaultContentNegotiation())


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_the_plain_headers_skip_drfs_parsing(accept: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    def parsed(*_args: Any) -> Any:
        raise AssertionError("DRF's Accept parsing ran")

    monkeypatch.setattr(DefaultContentNegotiation, "_get_parsed_accept_list", parsed)
    renderer, media_type = CairnContentNegotiation().select_renderer(_request(accept), [CairnJSONRenderer()])
    assert (type(renderer), media_type) == (CairnJSONRenderer, "application/json")


def test_a_format_override_goes_through_drf(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = DefaultContentNegotiation.select_renderer

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append("drf")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DefaultContentNegotiation, "select_renderer", spy)
    request = _request(None, "?format=json")
    _renderer, media_type = CairnContentNegotiation().select_renderer(request, [CairnJSONRenderer()])
    assert (calls, media_type) == (["drf"], "application/json")


def test_an_accept_the_api_cannot_serve_is_still_a_406(api: ApiClient) -> None:
    response = api.get("/api/v1/threads/", HTTP_ACCEPT="text/html")
    assert response.status_code == 406
    assert response.json()["error"]["code"] == "not_acceptable"


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_the_api_answers_json_for_the_plain_headers(api: ApiClient, accept: str | None) -> None:
    headers: dict[str, Any] = {} if accept is None else {"HTTP_ACCEPT": accept}
    response = api.get("/api/v1/threads/", **headers)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.json()["results"] == []
