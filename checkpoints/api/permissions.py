"""Scopes: reads need `read`, writes need `write`; views name stricter needs in `required_scopes`."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from checkpoints.models import ApiKey


def required_scope(request: Request, view: Any) -> str:
    overrides: dict[str, str] = getattr(view, "required_scopes", {})
    if request.method in overrides:
        return str(overrides[request.method])
    # str(): the plain value ("write"), not the enum member, wherever the scope is shown.
    return str(ApiKey.Scope.READ if request.method in SAFE_METHODS else ApiKey.Scope.WRITE)


class HasScope(BasePermission):
    message = "This API key's scope does not allow this request."

    def has_permission(self, request: Request, view: Any) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return False
        scope = required_scope(request, view)
        if not key.has_scope(scope):
            self.message = f"This request needs the {scope!r} scope; the key has {key.scope!r}."
            return False
        return True
