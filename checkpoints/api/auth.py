"""`Authorization: Bearer <api key>`. The key fixes the workspace for the whole request."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

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


class ApiKeyAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        header = get_authorization_header(request).split()
        if not header:
            return None
        if header[0].lower() != self.keyword.lower().encode() or len(header) != 2:
            raise AuthenticationFailed("Use the header `Authorization: Bearer <api key>`.")
        try:
            raw = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise AuthenticationFailed("Invalid API key.") from exc
        key = api_key_authenticate(raw)
        if key is None:
            raise AuthenticationFailed("Invalid, revoked or expired API key.")
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) when credentials are missing or wrong.
        return f'{self.keyword} realm="cairn"'
