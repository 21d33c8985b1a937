"""The address of the client behind a request, seen through `CAIRN_TRUSTED_PROXIES` proxies
(docs/operating.md)."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """With N trusted proxies in front, the N-th address from the right of X-Forwarded-For: the one the
    outermost trusted proxy saw (entries left of it are whatever the client sent). Without proxies, or when
    the header is shorter than that or that entry is not an address, REMOTE_ADDR."""
    remote: str = request.META.get("REMOTE_ADDR", "")
    proxies = settings.CAIRN_TRUSTED_PROXIES
    if proxies <= 0:
        return remote  # nothing in front adds the header, so it is the client's own word
    hops = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
    if len(hops) < proxies:
        return remote
    try:
        return str(ipaddress.ip_address(hops[-proxies].strip()))
    except ValueError:
        return remote
