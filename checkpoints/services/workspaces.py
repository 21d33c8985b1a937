"""Workspaces and API keys: creation, authentication and revocation."""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
import secrets
import string
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import ApiKey, Workspace
from checkpoints.services.audit import Actor, audit_record
from checkpoints.storage.api_key_cache import (
    WindowOf,
    api_key_cached,
    api_key_remember_use,
    api_keys_changed,
)

KEY_PREFIX = "cairn_"
_PREFIX_LENGTH = 8
_PREFIX_ALPHABET = string.ascii_lowercase + string.digits
_PREFIX_CHARS = frozenset(_PREFIX_ALPHABET)
# last_used_at is written at most this often per key, so authentication stays a read.
LAST_USED_RESOLUTION = timedelta(seconds=60)

RATE_PERIODS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}
_RATE = re.compile(r"^\s*([1-9][0-9]{0,9})\s*/\s*([A-Za-z]+)\s*\Z")


@functools.lru_cache(maxsize=256)
def throttle_rate_parse(rate: str) -> tuple[int, int]:
    """'6000/min' -> (6000, 60): `<count >= 1>/<s|sec|second|m|min|minute|h|hour|d|day>`, else
    ValidationFailed (naming the `throttle_rate` field). Remembered per rate (every request parses its
    key's rate; a bad one raises every time)."""
    match = _RATE.match(rate)
    if match is None or match.group(2).lower() not in RATE_PERIODS:
        message = f"{rate!r} is not a rate like '100/s' or '6000/min' (periods: s, min, hour, day)."
        raise ValidationFailed(message, {"fields": {"throttle_rate": [message]}})
    return int(match.group(1)), RATE_PERIODS[match.group(2).lower()]


def workspace_get_or_create(*, slug: str, name: str | None = None) -> tuple[Workspace, bool]:
    """The workspace with this slug, created (named after the slug unless `name` is given) if missing."""
    return Workspace.objects.get_or_create(slug=slug, defaults={"name": name or slug})


def _hash_secret(secret: str) -> str:
    # The secret is 256 random bits, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@transaction.atomic
def api_key_create(
    *,
    workspace: Workspace,
    name: str,
    scope: str = ApiKey.Scope.WRITE,
    expires_at: datetime | None = None,
    actor: Actor | None = None,
    throttle_rate: str = "",
) -> tuple[ApiKey, str]:
    """Create a key and return it with its full secret string, which is shown once and never stored.

    `throttle_rate` ("100/s", "6000/min", ...; "" = the server default) is validated here.
    """
    if throttle_rate:
        throttle_rate_parse(throttle_rate)
    prefix = "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(_PREFIX_LENGTH))
    secret = secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        workspace=workspace,
        name=name,
        prefix=prefix,
        secret_hash=_hash_secret(secret),
        scope=scope,
        expires_at=expires_at,
        throttle_rate=throttle_rate,
    )
    audit_record(
        workspace=workspace,
        actor=actor or Actor.system(),
        action="apikey.create",
        target_type="api_key",
        target_id=prefix,
        details={"name": name, "scope": scope},
    )
    return key, f"{KEY_PREFIX}{prefix}_{secret}"


def api_key_authenticate(raw_key: str, *, count_in: WindowOf | None = None) -> ApiKey | None:
    """The usable key matching `raw_key` (with its workspace loaded), or None. Constant-time comparison.
    No query while the key is remembered; `count_in`: see checkpoints.storage.api_key_cache."""
    if not raw_key.startswith(KEY_PREFIX) or len(raw_key) < len(KEY_PREFIX) + _PREFIX_LENGTH + 2:
        return None
    prefix = raw_key[len(KEY_PREFIX) : len(KEY_PREFIX) + _PREFIX_LENGTH]
    separator, secret = (
        raw_key[len(KEY_PREFIX) + _PREFIX_LENGTH],
        raw_key[len(KEY_PREFIX) + _PREFIX_LENGTH + 1 :],
    )
    # Anything but the prefix alphabet (NUL included) cannot name a key, and must not reach the database.
    if separator != "_" or not _PREFIX_CHARS.issuperset(prefix):
        return None
    secret_hash = _hash_secret(secret)
    key = api_key_cached(prefix, secret_hash=secret_hash, count_in=count_in)
    if key is None or not hmac.compare_digest(key.secret_hash, secret_hash):
        return None
    now = timezone.now()
    if not key.is_usable(now):
        return None
    if key.last_used_at is None or key.last_used_at < now - LAST_USED_RESOLUTION:
        key.last_used_at = now
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        api_key_remember_use(key)
    return key


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey, actor: Actor) -> ApiKey:
    """Revoke a key. Every process refuses it from its next request on (the key generation changes when
    this transaction commits: checkpoints.storage.api_key_cache)."""
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(revoked_at=api_key.revoked_at)
        api_keys_changed()
        audit_record(
            workspace=api_key.workspace,
            actor=actor,
            action="apikey.revoke",
            target_type="api_key",
            target_id=api_key.prefix,
            details={"name": api_key.name},
        )
    return api_key
