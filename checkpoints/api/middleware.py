"""Guards that run before DRF for /api/ requests: body size, NUL in the query string, a missing trailing
slash, database outages, and the error envelope on every non-JSON error response. And the browser's
middleware (sessions, users, messages), skipped for /api/ requests."""

from __future__ import annotations

import io
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import middleware as auth_middleware
from django.contrib.messages import middleware as message_middleware
from django.contrib.sessions import middleware as session_middleware
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.wsgi import WSGIRequest
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from checkpoints.api.errors import error_json_response

_CHUNK = 64 * 1024


def _too_large(limit: int) -> HttpResponse:
    return error_json_response(
        "payload_too_large", f"The body is larger than {limit} bytes.", 413, {"max_bytes": limit}
    )


class ApiGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        limit = settings.CAIRN_MAX_BODY_BYTES
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_json_response("validation_error", "Content-Length is not a number.", 400)
        if declared > limit:
            # Refuse before reading a byte of the body.
            return _too_large(limit)
        if not declared and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            sized = self._with_sized_body(request, limit)
            if sized is None:
                return _too_large(limit)
            request = sized
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                message = "NUL characters are not allowed in query parameters."
                field = key.replace("\x00", "\\x00")
                return error_json_response("validation_error", message, 400, {"fields": {field: [message]}})
        if declared and not request.META.get("CONTENT_TYPE"):
            request.META["CONTENT_TYPE"] = "application/json"
        self._add_missing_slash(request)
        response = self.get_response(request)
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith(
            "application/json"
        ):
            # Django's own 404/500 pages (HTML, and the debug page under DEBUG) never reach API clients.
            code = {404: "not_found", 405: "method_not_allowed"}.get(response.status_code, "error")
            return error_json_response(code, response.reason_phrase, response.status_code)
        return response

    @staticmethod
    def _with_sized_body(request: HttpRequest, limit: int) -> HttpRequest | None:
        """A chunked body has no Content-Length, so Django and DRF would ignore it. Where the server
        terminates the input (gunicorn sets wsgi.input_terminated; ASGI servers hand over the whole body),
        read it, at most `limit` bytes (None: more than that), and hand on the request Django would have
        built for the same body with its Content-Length. Elsewhere (runserver) the input is the raw socket,
        which cannot be read to its end safely: the body stays ignored."""
        read: Callable[[int], bytes]
        if isinstance(request, ASGIRequest):
            read = request.read  # the ASGI handler has already spooled the whole body
        elif request.META.get("wsgi.input_terminated"):
            read = request.META["wsgi.input"].read
        else:
            return request
        body = bytearray()
        while len(body) <= limit:
            chunk = read(_CHUNK)
            if not chunk:
                break
            body += chunk
        if len(body) > limit:
            return None
        # Django sizes a request's body stream when it builds the request, so build it again (only the
        # security and static-file middleware ran before this one, and they keep nothing on the request).
        size = str(len(body))
        if isinstance(request, ASGIRequest):
            headers = [*request.scope.get("headers", []), (b"content-length", size.encode())]
            return ASGIRequest({**request.scope, "headers": headers}, io.BytesIO(bytes(body)))
        return WSGIRequest({**request.META, "wsgi.input": io.BytesIO(bytes(body)), "CONTENT_LENGTH": size})

    @staticmethod
    def _add_missing_slash(request: HttpRequest) -> None:
        """Serve /api/v1/x as /api/v1/x/ instead of redirecting (a redirect would drop a POST body)."""
        if request.path_info.endswith("/"):
            return
        try:
            resolve(request.path_info + "/")
        except Resolver404:
            return
        request.path_info += "/"
        request.path += "/"

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, OperationalError | InterfaceError):
            return error_json_response("unavailable", "The database is unavailable; retry shortly.", 503)
        return None


class _BrowserOnly:
    """Skips a middleware for /api/ requests: the API authenticates by key, has no session, cookies, CSRF
    (DRF views are exempt) or flash messages. Subclasses keep the
    Django class they wrap, so the admin's system checks still find them."""

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith("/api/"):
            return self.get_response(request)  # type: ignore[attr-defined]  # MiddlewareMixin's
        return super().__call__(request)  # type: ignore[misc]


class SessionMiddleware(_BrowserOnly, session_middleware.SessionMiddleware):
    pass


class AuthenticationMiddleware(_BrowserOnly, auth_middleware.AuthenticationMiddleware):
    pass


class MessageMiddleware(_BrowserOnly, message_middleware.MessageMiddleware):
    pass
