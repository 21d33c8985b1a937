"""The sign-in form of the dashboard and the admin: the admin's own rules (active staff only) behind the
sign-in throttle (`checkpoints.services.login_throttle`)."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError

from checkpoints.services.login_throttle import login_failed, login_locked_for


class ThrottledLoginForm(AdminAuthenticationForm):
    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        wait = login_locked_for(username, self.request)
        if wait:
            minutes = max(1, round(wait / 60))
            raise ValidationError(
                "Too many failed sign-ins for this account or from this address. "
                f"Try again in {minutes} minute{'s' if minutes != 1 else ''}.",
                code="throttled",
            )
        try:
            return super().clean()
        except ValidationError:
            if self.get_user() is None:  # a wrong password, not an inactive or non-staff account
                login_failed(username, self.request)
            raise
