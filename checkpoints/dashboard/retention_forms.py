"""The retention policy form: durations in days, hours, minutes or seconds, the same bounds as the API
(read from its serializer, the one place they are defined). An empty amount switches the rule off."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time
from typing import Any

from django import forms
from django.conf import settings

from checkpoints.api.serializers.retention import RetentionPolicyUpdateSerializer
from checkpoints.dashboard.forms import iso_date_field
from checkpoints.templatetags.dashboard import duration

UNITS = {"days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
UNIT_CHOICES = [(name, name) for name in UNITS]


def api_bounds(name: str) -> tuple[int, int]:
    """The (min, max) the API accepts for a policy field."""
    field: Any = RetentionPolicyUpdateSerializer().fields[name]
    return int(field.min_value), int(field.max_value)


class DurationWidget(forms.MultiWidget):
    """An amount and its unit; a stored number of seconds is shown in the largest unit that divides it."""

    def __init__(self, label: str) -> None:
        super().__init__(
            [
                forms.NumberInput(attrs={"min": 1, "step": 1, "inputmode": "numeric"}),
                forms.Select(choices=UNIT_CHOICES, attrs={"aria-label": f"{label}: unit"}),
            ]
        )

    def id_for_label(self, id_: str) -> str:
        return f"{id_}_0" if id_ else id_  # the label names the amount; the unit has its own aria-label

    def decompress(self, value: int | None) -> list[Any]:
        if not value:
            return [None, "days"]
        unit = next(name for name, size in UNITS.items() if value % size == 0)
        return [value // UNITS[unit], unit]


class DurationField(forms.MultiValueField):
    """A whole number of seconds entered as amount + unit, within the API's bounds; None when empty."""

    def __init__(self, *, policy_field: str, label: str, help_text: str) -> None:
        _, self.max_seconds = api_bounds(policy_field)
        super().__init__(
            fields=(
                forms.IntegerField(required=False, min_value=1),
                forms.ChoiceField(required=False, choices=UNIT_CHOICES),
            ),
            require_all_fields=False,
            required=False,
            widget=DurationWidget(label),
            label=label,
            help_text=help_text,
        )

    def compress(self, data_list: list[Any]) -> int | None:
        if not data_list or data_list[0] in (None, ""):
            return None
        seconds = int(data_list[0]) * UNITS[data_list[1] or "seconds"]
        if seconds > self.max_seconds:
            raise forms.ValidationError(f"At most {duration(self.max_seconds)}.")
        return seconds


def _count_field(policy_field: str, label: str, help_text: str) -> forms.IntegerField:
    low, high = api_bounds(policy_field)
    return forms.IntegerField(required=False, min_value=low, max_value=high, label=label, help_text=help_text)


class RetentionPolicyForm(forms.Form):
    """Every policy field at once; the cleaned data are the keyword arguments of retention_policy_update."""

    default_ttl_seconds = DurationField(
        policy_field="default_ttl_seconds",
        label="Default checkpoint TTL",
        help_text="Given to checkpoints saved from now on without a TTL. Empty: they never expire.",
    )
    keep_latest = _count_field(
        "keep_latest",
        "Keep latest",
        "Live checkpoints kept per thread and namespace; older ones become tombstones. Empty: all.",
    )
    thread_idle_ttl_seconds = DurationField(
        policy_field="thread_idle_ttl_seconds",
        label="Idle thread expiry",
        help_text="Threads untouched this long are deleted, unless they have their own idle expiry (it "
        "applies instead), are pinned or hold a pinned checkpoint. Empty: only threads' own expiry applies.",
    )
    tombstone_retention_seconds = DurationField(
        policy_field="tombstone_retention_seconds",
        label="Keep tombstones for",
        help_text="Tombstones are deleted this long after they expired. Empty: kept forever.",
    )
    auto_summarize_every = _count_field(
        "auto_summarize_every",
        "Summarise every",
        "Summarise a thread into its medallion every N new messages. Empty: never.",
    )


class KeepUntilForm(forms.Form):
    """A thread's own idle expiry given as the last day to keep it: the thread is deleted at the end of that
    day (00:00 UTC the day after) if nothing writes to it before; empty removes its own expiry. The cleaned
    `ttl_seconds` is what `thread_update` takes, counted from `now`."""

    keep_until = iso_date_field(
        label="Keep until (UTC date)",
        help_text="Deleted at the end of this day if nothing writes to it before; every write moves the "
        "date as far again. Empty: remove the thread's own expiry (the workspace's rule applies again).",
    )

    def __init__(self, *args: Any, now: datetime, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.now = now

    def clean_keep_until(self) -> date | None:
        day: date | None = self.cleaned_data.get("keep_until")
        if day is not None and day < self.now.astimezone(UTC).date():
            raise forms.ValidationError("Pick today or a later date.")
        if day is not None and self.seconds_until_end_of(day) > settings.CAIRN_MAX_TTL_SECONDS:
            raise forms.ValidationError(f"At most {duration(settings.CAIRN_MAX_TTL_SECONDS)} from now.")
        return day

    def seconds_until_end_of(self, day: date) -> int:
        # Counted in whole days from today's midnight: no date arithmetic that could pass year 9999.
        today = self.now.astimezone(UTC).date()
        since_midnight = self.now - datetime.combine(today, time(0), tzinfo=UTC)
        return math.ceil(((day - today).days + 1) * 86_400 - since_midnight.total_seconds())

    @property
    def ttl_seconds(self) -> int | None:
        day = self.cleaned_data.get("keep_until")
        return None if day is None else self.seconds_until_end_of(day)
