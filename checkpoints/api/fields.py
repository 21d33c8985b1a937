"""Strict input fields and the serializer base for writes.

DRF's stock fields coerce (`"5"` becomes 5, `1` becomes "1", `"yes"` becomes True). A wrong type is the
client's bug and silently "fixing" it hides it, so write serializers use these instead and refuse unknown and
read-only keys instead of ignoring them.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from checkpoints.integrity import parse_timestamp
from checkpoints.models.thread import CLIENT_ID_PATTERN

_INT64_MAX = 2**63 - 1


class StrictCharField(serializers.CharField):
    """Only JSON strings, kept as sent (never trimmed); never NUL (PostgreSQL text cannot hold it)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if "\x00" in data:
            raise serializers.ValidationError("NUL characters are not allowed.")
        try:
            data.encode("utf-8")
        except UnicodeEncodeError as exc:  # the parser refuses these; data may come from elsewhere
            raise serializers.ValidationError("Lone UTF-16 surrogates are not allowed.") from exc
        return super().to_internal_value(data)


class ClientIdField(StrictCharField):
    """A client-chosen id: `[A-Za-z0-9._:-]{1,128}` (safe in URLs)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 128)
        super().__init__(**kwargs)
        self.validators.append(
            RegexValidator(rf"^{CLIENT_ID_PATTERN}\Z", "Use 1-128 characters from A-Z a-z 0-9 . _ : -")
        )


class NameField(StrictCharField):
    """A name that identifies something (an agent, a user): 1-255 characters without surrounding whitespace.
    `" alice"` would silently be another agent than `"alice"`, so it is refused rather than trimmed."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_length", 1)
        kwargs.setdefault("max_length", 255)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if value != value.strip():
            raise serializers.ValidationError("Leading or trailing whitespace is not allowed.")
        return value


class StrictIntegerField(serializers.IntegerField):
    """Only JSON integers (not strings, floats or booleans), within 64 bits unless bounded tighter."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_value", _INT64_MAX)
        kwargs.setdefault("min_value", -_INT64_MAX)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class TtlSecondsField(StrictIntegerField):
    """A TTL in seconds: > 0, bounded so `now + ttl` stays a real date; null means "no expiry"."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", settings.CAIRN_MAX_TTL_SECONDS)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


@extend_schema_field(OpenApiTypes.ANY)
class AnyJSONField(serializers.Field):
    """Any JSON value, passed through (the parser already refused what JSON cannot hold)."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field({"type": "object", "additionalProperties": True})
class JSONObjectField(AnyJSONField):
    """A JSON object."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Expected a JSON object.")
        return data


class StringListField(serializers.ListField):
    """A list of non-empty strings without NUL."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", StrictCharField(max_length=255))
        kwargs.setdefault("max_length", 256)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, list):
            self.fail("not_a_list", input_type=type(data).__name__)
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.DATETIME)
class TimestampField(serializers.Field):
    """An ISO 8601 timestamp with an explicit offset (a naive one is ambiguous and refused)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            raise serializers.ValidationError("Expected an ISO 8601 timestamp string.")
        try:
            return parse_timestamp(data)
        except ValueError as exc:
            raise serializers.ValidationError("Expected an ISO 8601 timestamp with a UTC offset.") from exc

    def to_representation(self, value: Any) -> Any:
        return value


class StrictSerializer(serializers.Serializer):
    """Input serializer: refuses keys it does not know and keys that are read-only.

    `read_only_names` lists keys of the resource's representation that a client may echo back by mistake
    (ids of others, checksum, created_at, ...): they are refused as read-only rather than as unknown.
    """

    read_only_names: frozenset[str] = frozenset()

    @cached_property
    def fields(self) -> Any:
        """The bound fields, built once per class instead of deep-copied for every request (the largest
        cost of validating a small body). They are shared safely because input serializers here never
        take a context, an instance or `partial`, and DRF's fields keep no per-call state; DRF's own
        validation still runs, so every result and error is the same."""
        cls = type(self)
        shared = cls.__dict__.get("_shared_fields")
        if shared is None:
            # Bound to a prototype that holds no data (binding to `self` would keep this request's body).
            shared = serializers.Serializer.fields.func(cls())  # type: ignore[attr-defined]
            cls._shared_fields = shared  # type: ignore[attr-defined]
        return shared

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        problems = {}
        for key in data:
            field = self.fields.get(key)
            if field is None:
                read_only = key in self.read_only_names
                problems[key] = ["This field is read-only." if read_only else "Unknown field."]
            elif field.read_only:
                problems[key] = ["This field is read-only."]
        if problems:
            raise serializers.ValidationError(problems)
        return super().to_internal_value(data)
