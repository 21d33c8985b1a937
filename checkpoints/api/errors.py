"""The error envelope `{"error": {"code", "message", "details"}}` and the one handler that produces it."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, DataError, IntegrityError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import set_rollback

from checkpoints.exceptions import CairnError

logger = logging.getLogger(__name__)

# DRF exception class -> (code, status). Codes outside the table in docs/api/index.md exist only for
# conditions it does not name.
_DRF_CODES: list[tuple[type[drf.APIException], str, int]] = [
    (drf.NotAuthenticated, "not_authenticated", 401),
    (drf.AuthenticationFailed, "not_authenticated", 401),
    (drf.PermissionDenied, "permission_denied", 403),
    (drf.NotFound, "not_found", 404),
    (drf.Throttled, "throttled", 429),
    (drf.MethodNotAllowed, "method_not_allowed", 405),
    (drf.NotAcceptable, "not_acceptable", 406),
    (drf.UnsupportedMediaType, "unsupported_media_type", 415),
    (drf.ParseError, "validation_error", 400),
    (drf.ValidationError, "validation_error", 400),
]


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_json_response(
    code: str, message: str, status: int, details: dict[str, Any] | None = None
) -> JsonResponse:
    """The envelope as a plain Django response, for code that runs outside DRF (middleware, handler404)."""
    return JsonResponse(
        envelope(code, message, details), status=status, json_dumps_params={"ensure_ascii": False}
    )


def _first_message(detail: Any, path: str = "") -> str:
    if isinstance(detail, dict):
        for key, value in detail.items():
            return _first_message(value, f"{path}.{key}" if path else str(key))
        return "Invalid input."
    if isinstance(detail, list) and detail:
        return _first_message(detail[0], path)
    text = str(detail)
    return f"{path}: {text}" if path and path != "non_field_errors" else text


def _validation_details(exc: drf.APIException) -> dict[str, Any]:
    detail = as_serializer_error(exc) if isinstance(exc, drf.ValidationError) else {"detail": exc.detail}
    return {"fields": detail}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Map every error a view can raise to the envelope. Unknown exceptions are left to Django (real bugs)."""
    headers: dict[str, str] = {}
    if isinstance(exc, CairnError):
        set_rollback()
        return Response(envelope(exc.code, exc.message, exc.details), status=exc.status)
    if isinstance(exc, Http404 | ObjectDoesNotExist):
        # ObjectDoesNotExist: a row that vanished between two reads of one request (a concurrent delete).
        exc = drf.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        # Safety net: a model or form validator rejected input that reached it (e.g. a malformed UUID).
        exc = drf.ValidationError(detail=as_serializer_error(exc))
    if isinstance(exc, drf.APIException):
        code, status = next(
            ((c, s) for cls, c, s in _DRF_CODES if isinstance(exc, cls)), ("error", exc.status_code)
        )
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
        details: dict[str, Any] = {}
        wait = getattr(exc, "wait", None)
        if isinstance(exc, drf.Throttled) and wait is not None:
            retry_after = max(1, int(wait + 0.999))
            headers["Retry-After"] = str(retry_after)
            details = {"retry_after": retry_after}
            message = f"Too many requests; retry in {retry_after} s."
        elif isinstance(exc, drf.ValidationError):
            details = _validation_details(exc)
            message = _first_message(details["fields"])
        else:
            message = _first_message(exc.detail)
        set_rollback()
        return Response(envelope(code, message, details), status=status, headers=headers)
    if isinstance(exc, OperationalError | InterfaceError):
        logger.warning("database unavailable: %s", exc)
        set_rollback()
        return Response(envelope("unavailable", "The database is unavailable; retry shortly."), status=503)
    if isinstance(exc, DataError):
        # Safety net: input the validators let through but the database refused (a validator is missing).
        logger.error("database refused input: %s", exc)
        set_rollback()
        return Response(
            envelope("validation_error", "The database refused a value in this request."), status=400
        )
    if isinstance(exc, IntegrityError):
        logger.error("integrity error reached the API: %s", exc)
        set_rollback()
        return Response(envelope("conflict", "The request conflicts with stored data."), status=409)
    if isinstance(exc, DatabaseError):
        logger.exception("database error")
        set_rollback()
        return Response(envelope("unavailable", "The database failed; retry shortly."), status=503)
    return None


def api_not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return error_json_response("not_found", "No such endpoint.", 404)
