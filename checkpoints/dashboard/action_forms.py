"""Inputs of the dashboard's actions (each action is a confirmation page whose POST calls one service)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.core.validators import RegexValidator
from django.utils import timezone

from checkpoints import medallion_schema as schema
from checkpoints.models import Annotation, ApiKey
from checkpoints.models.annotation import MAX_COMMENT_CHARS
from checkpoints.models.thread import CLIENT_ID_PATTERN

client_id_validator = RegexValidator(
    rf"\A{CLIENT_ID_PATTERN}\Z", "Use 1-128 letters, digits, '.', '_', ':' or '-'."
)


class ConfirmForm(forms.Form):
    """Actions that need nothing but the confirmation itself."""


class TtlForm(forms.Form):
    ttl_seconds = forms.IntegerField(
        required=False,
        min_value=1,
        label="Expire in (seconds, from now)",
        help_text="Leave empty to remove the expiry: the checkpoint then never expires.",
    )

    def clean_ttl_seconds(self) -> int | None:
        value: int | None = self.cleaned_data.get("ttl_seconds")
        if value is not None and value > settings.CAIRN_MAX_TTL_SECONDS:
            raise forms.ValidationError(f"At most {settings.CAIRN_MAX_TTL_SECONDS} seconds.")
        return value


class PruneForm(forms.Form):
    strategy = forms.ChoiceField(
        choices=[
            ("keep_latest", "Keep only the newest live checkpoint of each namespace"),
            ("delete", "Delete every checkpoint of the thread"),
        ],
        widget=forms.RadioSelect,
        initial="keep_latest",
    )


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    scope = forms.ChoiceField(choices=ApiKey.Scope.choices, initial=ApiKey.Scope.WRITE)
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=3650, label="Expires in (days)", help_text="Empty: never."
    )

    def service_arguments(self) -> dict[str, Any]:
        days = self.cleaned_data.get("expires_in_days")
        return {
            "name": self.cleaned_data["name"],
            "scope": self.cleaned_data["scope"],
            "expires_at": timezone.now() + timedelta(days=days) if days else None,
        }


class ScopeForm(forms.Form):
    """A thread's medallion scope, as comma-separated lists; checked by the medallion schema, as the API's
    `PATCH threads/{id}/` body is, and saved through the same service (thread_update)."""

    graph_nodes = forms.CharField(
        required=False, max_length=4000, help_text="Comma-separated graph node names, e.g. planner, writer"
    )
    tags = forms.CharField(required=False, max_length=4000, help_text="Comma-separated tags, e.g. billing")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        lists = {
            key: list(
                dict.fromkeys(part.strip() for part in (cleaned.get(key) or "").split(",") if part.strip())
            )
            for key in ("graph_nodes", "tags")
        }
        try:
            scope = schema.MedallionScope.from_dict(lists)
        except schema.SchemaError as error:
            raise forms.ValidationError(str(error)) from error
        if scope.is_empty:
            raise forms.ValidationError(
                "Give at least one graph node or tag: an empty scope cannot be summarised."
            )
        cleaned["scope"] = scope.to_dict()
        return cleaned


class AnnotationForm(forms.Form):
    """A finding on a checkpoint or a thread (Django's CharField already refuses NUL characters)."""

    comment = forms.CharField(
        max_length=MAX_COMMENT_CHARS, strip=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    verdict = forms.ChoiceField(
        choices=[("", "No verdict"), *Annotation.Verdict.choices], required=False, label="Verdict"
    )
