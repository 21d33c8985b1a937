"""The dashboard's Content-Security-Policy (settings.CONTENT_SECURITY_POLICY): its pages load only their own
scripts, styles and images (no inline code, no other origins), so an injected tag can neither run nor phone
home. django-csp writes the header; it builds the policy for every response before it looks at its
excluded prefixes (about 0.15 ms an API request), so only the dashboard's requests are handed to it."""

from __future__ import annotations

from collections.abc import Awaitable

from csp.middleware import CSPMiddleware
from django.http import HttpRequest, HttpResponseBase


class DashboardContentSecurityPolicyMiddleware(CSPMiddleware):
    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if not request.path.startswith("/dashboard/"):
            return self.get_response(request)
        return super().__call__(request)
