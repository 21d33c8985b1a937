"""Sign-in throttling for the dashboard and the admin (both use `ThrottledLoginForm`).

After `CAIRN_LOGIN_MAX_FAILURES` failed sign-ins for one username, or from one client address, within
`CAIRN_LOGIN_WINDOW_SECONDS`, every further attempt for it — even with the right password — is refused until
the window ends. The client's address is read through `CAIRN_TRUSTED_PROXIES` proxies
(`checkpoints.client_address`). The counts live in the shared cache, so every web process sees them. The
lock is audited in each workspace of the targeted account. When Redis is down the counts cannot be kept and
sign-in stays open, like the API's throttle (docs/security.md explains the choice).
"""

from __future__ import annotations

import hashlib
import logging
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.http import HttpRequest

from checkpoints.cache import CacheUnavailable, count_hit
from checkpoints.client_address import client_address
from checkpoints.models import Workspace
from checkpoints.services.audit import Actor, audit_record

logger = logging.getLogger(__name__)


def _window() -> tuple[int, int]:
    """(this window's number, seconds until it ends)."""
    period = settings.CAIRN_LOGIN_WINDOW_SECONDS
    now = time.time()
    return int(now // period), int(period - now % period) + 1


def _counters(username: str, request: HttpRequest | None) -> list[str]:
    window, _ = _window()
    # Usernames are hashed: the cache must not hold what people typed (a password in the username box).
    name = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
    counters = [f"login-failures:user:{name}:{window}"]
    address = client_address(request) if request is not None else ""
    if address:
        counters.append(f"login-failures:client:{address}:{window}")
    return counters


def login_locked_for(username: str, request: HttpRequest | None) -> int:
    """Seconds until this username (or this client) may try again; 0 if it may now."""
    counts = cache.get_many(_counters(username, request))  # a Redis outage reads as no failures
    if any(int(count) >= settings.CAIRN_LOGIN_MAX_FAILURES for count in counts.values()):
        return _window()[1]
    return 0


def login_failed(username: str, request: HttpRequest | None) -> None:
    """Count one failed sign-in; the failure that reaches the limit locks the account and is audited."""
    _, remaining = _window()
    try:
        counts = [count_hit(counter, remaining) for counter in _counters(username, request)]
    except (CacheUnavailable, ValueError):
        return
    if settings.CAIRN_LOGIN_MAX_FAILURES in counts:
        _record_lock(username, request, remaining)


def _record_lock(username: str, request: HttpRequest | None, seconds: int) -> None:
    address = client_address(request) if request is not None else ""
    logger.warning("sign-in locked for %ss after repeated failures (client %s)", seconds, address)
    user = get_user_model().objects.filter(username__iexact=username.strip()).first()
    if user is None:
        return
    details = {"client": address, "locked_seconds": seconds, "failures": settings.CAIRN_LOGIN_MAX_FAILURES}
    for workspace in Workspace.objects.filter(memberships__user=user):
        audit_record(
            workspace=workspace,
            actor=Actor.system("login-throttle"),
            action="user.login_locked",
            target_type="user",
            target_id=user.get_username(),
            details=details,
        )
