"""The hot path: the requests agents make on every step, answered without resolving the URL or DRF's dispatch.

`HotPathMiddleware` is the innermost middleware, so everything outside it runs for these requests as for any
other (host check, security headers, the API's guard, clickjacking). For a request to one of `HOT_ROUTES`
with a plain `Accept`, it does what DRF's dispatch would do, with the API's own parts: the key's
authentication (made once per request: `request_authentication`), the scope (`HasScope`), the rate
(`ApiKeyRateThrottle`), the query parameters' check, DRF's negotiation, the body's parser
(`StrictJSONParser`), then the view's own handler, given a `HotRequest` (what the handler reads of DRF's
`Request`), and DRF's own `finalize_response` (the view's headers, `Allow`; a `Response` rendered).

Only successes are answered here. Anything else (no key or a bad one, a scope or rate refusal, a body or
query the API refuses, a 404, 409, 410 or 412 from the service) goes on to the resolver and DRF, which
answer it as they answer every request: each error keeps one author. The service's refusals change nothing
(a save is one transaction), so DRF's second run meets the same refusal; the key is counted once, its
authentication and count being kept on the request. A write that fails otherwise (the database) is not run
again: DRF's own exception handling answers it (`drfs_answer`). docs/architecture.md.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.http import HttpRequest, HttpResponse, QueryDict
from django.http.request import HttpHeaders
from rest_framework.exceptions import APIException, AuthenticationFailed
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from checkpoints.api.auth import request_authentication
from checkpoints.api.negotiation import PLAIN_ACCEPT
from checkpoints.api.parsers import StrictJSONParser
from checkpoints.api.permissions import HasScope
from checkpoints.api.query_params import refuse_unknown_query_parameters
from checkpoints.api.throttling import ApiKeyRateThrottle
from checkpoints.exceptions import CairnError
from checkpoints.models import ApiKey
from checkpoints.routes import route_pattern, route_view


@dataclass(frozen=True)
class HotRoute:
    """A route the hot path answers: its name, its ids, the method."""

    name: str
    ids: tuple[str, ...]
    method: str

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return route_pattern(self.name, self.ids)

    @cached_property
    def view_class(self) -> type[APIView]:
        """The view Django resolves the route to (the URL conf names it, once)."""
        return route_view(self.name, self.ids).view_class  # type: ignore[attr-defined]


HOT_ROUTES = (
    HotRoute("api:thread-checkpoints", ("thread_id",), "POST"),  # save
    HotRoute("api:checkpoint-detail", ("thread_id", "checkpoint_id"), "GET"),  # restore
    HotRoute("api:thread-state", ("thread_id",), "GET"),  # the head
    HotRoute("api:thread-state", ("thread_id",), "PUT"),  # save a new head (If-Match)
    HotRoute("api:thread-checkpoints", ("thread_id",), "GET"),  # the timeline
    HotRoute("api:langgraph-checkpoint-save", ("thread_id",), "POST"),  # LangGraph's put
    HotRoute("api:checkpoint-writes", ("thread_id", "checkpoint_id"), "POST"),  # LangGraph's put_writes
    # Several tasks' put_writes. A refusal may follow tasks already stored; DRF's second run stores those
    # again with the same values (writes are idempotent) and meets the same refusal.
    HotRoute("api:langgraph-writes", ("thread_id",), "POST"),
    HotRoute("api:langgraph-checkpoints", (), "GET"),  # LangGraph's get_tuple and list
    HotRoute("api:thread-messages", ("thread_id",), "POST"),  # append messages
    HotRoute("api:thread-messages", ("thread_id",), "GET"),  # read them back
)


@dataclass
class HotRequest:
    """What DRF's permission, throttle, query-parameter and negotiation classes, its `finalize_response` and
    the hot views' handlers read of DRF's `Request`, which they are given instead of it."""

    method: str
    auth: ApiKey
    query_params: QueryDict
    django_request: HttpRequest
    data: Any = None
    accepted_renderer: BaseRenderer | None = None  # the negotiation's answer, where DRF's `initial` keeps it
    accepted_media_type: str | None = None

    @property
    def META(self) -> dict[str, Any]:  # Django's name
        return self.django_request.META

    @property
    def headers(self) -> HttpHeaders:
        return self.django_request.headers

    def build_absolute_uri(self, location: str | None = None) -> str:
        return self.django_request.build_absolute_uri(location)


def authorised(request: HttpRequest, view: APIView) -> HotRequest | None:
    """The request as the view's handler reads it, if DRF would let it reach the handler: a usable key, its
    scope, its rate. None otherwise (DRF then refuses it in its own words)."""
    try:
        authenticated = request_authentication(request)
    except AuthenticationFailed:
        return None
    if authenticated is None:
        return None
    checked = HotRequest(request.method or "", authenticated[1], request.GET, request)
    # DRF's classes read .method and .auth of the request, .required_scopes of the view.
    if not HasScope().has_permission(checked, view):  # type: ignore[arg-type]
        return None
    if not ApiKeyRateThrottle().allow_request(checked, view):  # type: ignore[arg-type]
        return None
    return checked


def parsed_body(request: HttpRequest) -> Any:
    """The body as DRF's parser gives it (CairnError for a body the API refuses); None without a body."""
    if not request.META.get("CONTENT_LENGTH"):
        return None
    return StrictJSONParser().parse(io.BytesIO(request.body))


def answered(route: HotRoute, request: HttpRequest, ids: dict[str, str]) -> HttpResponse | None:
    if request.META.get("HTTP_ACCEPT") not in PLAIN_ACCEPT or api_settings.URL_FORMAT_OVERRIDE in request.GET:
        return None  # DRF's negotiation decides
    view = route.view_class()
    hot_request = authorised(request, view)
    if hot_request is None:
        return None
    view.setup(hot_request, **ids)  # type: ignore[arg-type]  # as Django sets up a view: request, kwargs
    # What DRF's dispatch and `initial` set up around a handler: the headers of every answer, the format
    # suffix and the negotiated renderer (the first, for a plain `Accept`).
    view.headers = view.default_response_headers
    view.format_kwarg = view.get_format_suffix(**ids)
    negotiated = view.perform_content_negotiation(hot_request)  # type: ignore[arg-type]
    hot_request.accepted_renderer, hot_request.accepted_media_type = negotiated
    try:
        response = handled(route, view, request, hot_request)
        return None if response is None else finalized(view, view.request, response)
    finally:
        vars(view).clear()  # it served this request only (and `view.head` names it: a cycle otherwise)


def finalized(view: APIView, request: HotRequest | Request, response: HttpResponse) -> HttpResponse:
    """The answer as DRF's dispatch ends it: `finalize_response` (its headers; a `Response`'s renderer), then
    a `Response` rendered, as Django renders a view's."""
    response = view.finalize_response(request, response)  # type: ignore[arg-type]
    if isinstance(response, Response):
        response.render()
    return response


def handled(
    route: HotRoute, view: APIView, request: HttpRequest, hot_request: HotRequest
) -> HttpResponse | None:
    """The view's handler's answer, once the query and the body are known to be what the API accepts."""
    try:
        refuse_unknown_query_parameters(hot_request, view)  # type: ignore[arg-type]
        if route.method != "GET":
            hot_request.data = parsed_body(request)
            if hot_request.data is None:
                return None
    except CairnError:
        return None
    handler: Callable[..., HttpResponse] = getattr(view, route.method.lower())
    try:
        return handler(hot_request, **view.kwargs)
    except (CairnError, APIException):
        return None  # refused before anything was written (a save is one transaction): DRF answers it
    except Exception as error:
        if route.method == "GET":
            return None  # a read is served again by DRF, which answers as it answers any failure
        return drfs_answer(view, request, error)  # a write is not run twice


def drfs_answer(view: APIView, request: HttpRequest, error: Exception) -> HttpResponse:
    """DRF's answer to an exception a handler raised, as its dispatch gives it (the error envelope; or the
    exception raised again, a bug, for Django's 500), made with DRF's own `Request`, which the view then
    holds for `finalized`."""
    hot_request = view.request
    view.request = drf_request = view.initialize_request(request)
    drf_request.accepted_renderer = hot_request.accepted_renderer
    drf_request.accepted_media_type = hot_request.accepted_media_type
    return view.handle_exception(error)


class HotPathMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for route in HOT_ROUTES:
            if request.method == route.method and (match := route.pattern.match(request.path_info)):
                response = answered(route, request, match.groupdict())
                if response is not None:
                    return response
                break
        return self.get_response(request)
