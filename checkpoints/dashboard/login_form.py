"""The sign-in form of the dashboard and the admin: the admin's own rules (active staff only) behind the
sign-in throttle (django-axes, `checkpoints.services.login_throttle`), which counts the failures itself."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError

from checkpoints.services.login_throttle import login_locked


class ThrottledLoginForm(AdminAuthenticationForm):
    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        if self.request is not None and login_locked(self.request, username):
            minutes = max(1, round(settings.CAIRN_LOGIN_WINDOW_SECONDS / 60))
            raise ValidationError(
                "Too many failed sign-ins for this account or from this address. "
                f"Try again in {minutes} minute{'s' if minutes != 1 else ''}.",
                code="throttled",
            )
        return super().clean()
