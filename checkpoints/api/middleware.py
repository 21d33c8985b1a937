"""Guards that run before DRF for /api/ requests: body size, NUL in the query string, a missing trailing
slash, database outages, and the error envelope on every non-JSON error response."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from checkpoints.api.errors import error_json_response


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
            return error_json_response(
                "payload_too_large", f"The body is larger than {limit} bytes.", 413, {"max_bytes": limit}
            )
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                return error_json_response(
                    "validation_error",
                    "Query parameters may not contain NUL characters.",
                    400,
                    {"param": key},
                )
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
