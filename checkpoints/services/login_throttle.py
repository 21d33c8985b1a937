"""Sign-in throttling for the dashboard and the admin (both use `ThrottledLoginForm`): django-axes, configured
in `project/settings.py` (`AXES_*`) and fitted to Cairn by the functions here (docs/security.md).

After `CAIRN_LOGIN_MAX_FAILURES` failed sign-ins for one username, or from one client address, every further
attempt for it — even with the right password — is refused until `CAIRN_LOGIN_WINDOW_SECONDS` have passed
since the last counted failure. The client's address is read through `CAIRN_TRUSTED_PROXIES` proxies
(`checkpoints.client_address`). axes counts in the shared cache (its cache handler), so every web process sees
the counts; when Redis is down they cannot be kept and sign-in stays open, like the API's throttle. The lock
is audited in each workspace of the targeted account.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import Any

from axes.handlers.cache import AxesCacheHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth import get_user_model
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

from checkpoints.cache import CacheUnavailable
from checkpoints.models import Workspace
from checkpoints.services.audit import Actor, audit_record

logger = logging.getLogger(__name__)


def failure_limit(request: HttpRequest | None = None, credentials: dict[str, Any] | None = None) -> int:
    """`AXES_FAILURE_LIMIT`: failed sign-ins, per username or per client, that lock it."""
    return int(settings.CAIRN_LOGIN_MAX_FAILURES)


def cool_off(request: HttpRequest | None = None) -> timedelta:
    """`AXES_COOLOFF_TIME`: how long a lock lasts after the last counted failure."""
    return timedelta(seconds=settings.CAIRN_LOGIN_WINDOW_SECONDS)


def login_name(request: HttpRequest, credentials: dict[str, Any] | None) -> str:
    """`AXES_USERNAME_CALLABLE`: the username as counted, case and spaces aside. Hashed: neither the cache
    nor axes' log lines may hold what people typed (a password in the username box)."""
    typed = str((credentials or {}).get("username") or request.POST.get("username") or "")
    return hashlib.sha256(typed.strip().casefold().encode()).hexdigest()[:32]


def login_locked(request: HttpRequest, username: str) -> bool:
    """Whether this username, or this client, may not sign in now."""
    return AxesProxyHandler.is_locked(request, {"username": username})


def lockout_response(
    request: HttpRequest, original_response: HttpResponse, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    """`AXES_LOCKOUT_CALLABLE`: the sign-in page as the form rendered it; the form says why (its message)."""
    return original_response


class LoginThrottleHandler(AxesCacheHandler):
    """axes' cache handler, with sign-in left open while Redis is down (a count that cannot be kept)."""

    def user_login_failed(
        self, sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
    ) -> None:
        try:
            super().user_login_failed(sender, credentials, request, **kwargs)
        except CacheUnavailable as exc:
            logger.warning("sign-in failure not counted, the cache is unavailable: %s", exc)


@receiver(user_locked_out, dispatch_uid="checkpoints.login_locked_audit")
def audit_login_lock(sender: Any, request: HttpRequest, ip_address: str, **kwargs: Any) -> None:
    """The failure that locks an account is audited in each of its workspaces (not the refusals after it)."""
    if getattr(request, "axes_failures_since_start", None) is None:
        return  # a refused attempt while locked: the lock was audited when it began
    seconds = settings.CAIRN_LOGIN_WINDOW_SECONDS
    logger.warning("sign-in locked for %ss after repeated failures (client %s)", seconds, ip_address)
    username = str((getattr(request, "axes_credentials", None) or {}).get("username") or "").strip()
    user = get_user_model().objects.filter(username__iexact=username).first() if username else None
    if user is None:
        return
    details = {"client": ip_address, "locked_seconds": seconds, "failures": failure_limit()}
    for workspace in Workspace.objects.filter(memberships__user=user):
        audit_record(
            workspace=workspace,
            actor=Actor.system("login-throttle"),
            action="user.login_locked",
            target_type="user",
            target_id=user.get_username(),
            details=details,
        )
