"""`Authorization: Bearer <api key>`, or `X-Api-Key: <api key>` (the header langgraph-sdk sends). The key
fixes the workspace for the whole request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import HTTP_HEADER_ENCODING
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from checkpoints.api.throttling import rate_window
from checkpoints.models import ApiKey
from checkpoints.services.workspaces import api_key_authenticate


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """request.user for API requests: the key's identity (there is no Django user behind a key)."""

    api_key: ApiKey
    is_authenticated: bool = True
    is_anonymous: bool = False

    def __str__(self) -> str:
        return f"api-key:{self.api_key.prefix}"


def authorization_header(request: Request | HttpRequest) -> bytes:
    """The `Authorization` header as bytes, as DRF's `get_authorization_header` gives it, read from the WSGI
    environ: DRF's builds `request.headers`, a dict of every header, to read this one."""
    value = request.META.get("HTTP_AUTHORIZATION", b"")
    return value.encode(HTTP_HEADER_ENCODING) if isinstance(value, str) else value


KEYWORD = "Bearer"


def _presented_key(request: Request | HttpRequest) -> bytes | None:
    """The key the request presents: from `Authorization: Bearer`, else from `X-Api-Key`; None: neither."""
    header = authorization_header(request).split()
    if header:
        if header[0].lower() != KEYWORD.lower().encode() or len(header) != 2:
            raise AuthenticationFailed(f"Use the header `Authorization: {KEYWORD} <api key>`.")
        return header[1]
    value = request.META.get("HTTP_X_API_KEY")
    if value is None:
        return None
    raw = value.encode(HTTP_HEADER_ENCODING) if isinstance(value, str) else value
    if not raw.strip() or len(raw.split()) != 1:
        raise AuthenticationFailed("Use the header `X-Api-Key: <api key>`.")
    return raw.strip()


def request_authentication(request: Request | HttpRequest) -> tuple[ApiKeyPrincipal, ApiKey] | None:
    """The request's key (None: no key presented); AuthenticationFailed (401) for a header that names no
    usable key."""
    presented = _presented_key(request)
    if presented is None:
        return None
    try:
        raw = presented.decode("ascii")
    except UnicodeDecodeError as exc:
        raise AuthenticationFailed("Invalid API key.") from exc
    # The key's rate window is counted in the same round trip that checks the key is current.
    key = api_key_authenticate(raw, count_in=rate_window)
    if key is None:
        raise AuthenticationFailed("Invalid, revoked or expired API key.")
    return ApiKeyPrincipal(key), key


class ApiKeyAuthentication(BaseAuthentication):
    keyword = KEYWORD

    def authenticate(self, request: Request) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        return request_authentication(request)  # DRF's request keeps the outcome

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) when credentials are missing or wrong.
        return f'{self.keyword} realm="cairn"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents ApiKeyAuthentication in the OpenAPI schema (registered by being defined)."""

    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_requirement(self, auto_schema: Any) -> list[dict[str, list[Any]]]:
        # SPECTACULAR_SETTINGS["SECURITY"] already puts {"ApiKey": []} on every operation; naming it here too
        # would list it twice.
        return []

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Cairn API key: `Authorization: Bearer <key>` (or `X-Api-Key: <key>`)",
        }
