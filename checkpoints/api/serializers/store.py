"""Bodies and answers of the store routes, the Agent Protocol's (`/store/items`, `/store/items/search`,
`/store/namespaces`), and of Cairn's `POST store/batch/` (docs/store.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from checkpoints.api.fields import (
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from checkpoints.models.store import NAMESPACE_SEPARATOR

MAX_LABELS = 64
MAX_PAGE = 1000
MAX_OFFSET = 1_000_000
MAX_QUERY_CHARS = 10_000
MAX_TTL_MINUTES = 10 * 365 * 24 * 60
MAX_BATCH_OPS = 1000


class NamespaceField(serializers.ListField):
    """A namespace: a list of labels, each non-empty, without `.` (the separator) or NUL."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", StrictCharField(min_length=1, max_length=255))
        kwargs.setdefault("max_length", MAX_LABELS)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, list):
            self.fail("not_a_list", input_type=type(data).__name__)
        labels = list(super().to_internal_value(data))
        if any(NAMESPACE_SEPARATOR in label for label in labels):
            raise serializers.ValidationError("Namespace labels cannot contain periods ('.').")
        if len(NAMESPACE_SEPARATOR.join(labels)) > 1024:
            raise serializers.ValidationError("The namespace is longer than 1024 characters.")
        return labels


class PatternField(NamespaceField):
    """A namespace pattern for listing namespaces: labels, any of which may be `*` (any one label)."""


@extend_schema_field(
    {"oneOf": [{"type": "boolean", "enum": [False]}, {"type": "array", "items": {"type": "string"}}]}
)
class IndexField(serializers.Field):
    """`false` (not indexed for search by meaning), a list of field paths to embed, or null (the store's
    default fields)."""

    def to_internal_value(self, data: Any) -> Any:
        if data is False:
            return False
        if isinstance(data, list) and all(isinstance(p, str) and p and "\x00" not in p for p in data):
            if len(data) > 64 or any(len(p) > 255 for p in data):
                raise serializers.ValidationError("At most 64 field paths of 255 characters each.")
            return data
        raise serializers.ValidationError("Expected false or a list of field paths.")

    def to_representation(self, value: Any) -> Any:
        return value


class TtlMinutesField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if not 0 < data <= MAX_TTL_MINUTES:
            raise serializers.ValidationError(f"ttl is minutes, above 0 and at most {MAX_TTL_MINUTES}.")
        return float(data)


def _is_number_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and 0 < len(value) <= 4096
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)
    )


@extend_schema_field({"type": "array", "items": {"type": "array", "items": {"type": "number"}}})
class VectorsField(serializers.Field):
    """Vectors computed by the client (the SDK's `embed`), one per embedded text, all of one length."""

    def to_internal_value(self, data: Any) -> list[list[float]]:
        ok = isinstance(data, list) and len(data) <= 64 and all(_is_number_list(v) for v in data)
        if not ok or len({len(v) for v in data}) > 1:
            raise serializers.ValidationError("Expected up to 64 lists of numbers, all of one length.")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4096})
class QueryVectorField(serializers.Field):
    def to_internal_value(self, data: Any) -> list[float]:
        if not _is_number_list(data):
            raise serializers.ValidationError("Expected a list of 1 to 4096 numbers.")
        return [float(x) for x in data]

    def to_representation(self, value: Any) -> Any:
        return value


class ItemKeySerializer(StrictSerializer):
    namespace = NamespaceField(min_length=1)
    key = StrictCharField(min_length=1, max_length=1024)


class StorePutSerializer(ItemKeySerializer):
    """`PUT /store/items`: insert or replace an item."""

    value = JSONObjectField()
    index = IndexField(required=False, allow_null=True, default=None)
    ttl = TtlMinutesField(required=False, allow_null=True, default=None, help_text="Minutes; null: none.")
    vectors = VectorsField(
        required=False, allow_null=True, default=None, help_text="Cairn: vectors the client embedded."
    )


class StoreDeleteSerializer(ItemKeySerializer):
    """`DELETE /store/items`."""


class StoreSearchSerializer(StrictSerializer):
    """`POST /store/items/search`."""

    namespace_prefix = NamespaceField(required=False, default=list)
    filter = JSONObjectField(required=False, allow_null=True, default=None)
    limit = StrictIntegerField(required=False, default=10, min_value=1, max_value=MAX_PAGE)
    offset = StrictIntegerField(required=False, default=0, min_value=0, max_value=MAX_OFFSET)
    query = StrictCharField(required=False, allow_null=True, default=None, max_length=MAX_QUERY_CHARS)
    refresh_ttl = StrictBooleanField(required=False, allow_null=True, default=None)
    query_vector = QueryVectorField(
        required=False, allow_null=True, default=None, help_text="Cairn: the query as the client embedded it."
    )


class StoreNamespacesSerializer(StrictSerializer):
    """`POST /store/namespaces`."""

    prefix = PatternField(required=False, allow_null=True, default=None)
    suffix = PatternField(required=False, allow_null=True, default=None)
    max_depth = StrictIntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=MAX_LABELS
    )
    limit = StrictIntegerField(required=False, default=100, min_value=1, max_value=MAX_PAGE)
    offset = StrictIntegerField(required=False, default=0, min_value=0, max_value=MAX_OFFSET)


class StoreItemSerializer(serializers.Serializer):
    """An item as the Agent Protocol answers it; `score` only from a search by meaning."""

    namespace = serializers.ListField(child=serializers.CharField())
    key = serializers.CharField()
    value = JSONObjectField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    score = serializers.FloatField(required=False, allow_null=True)


class SearchItemsSerializer(serializers.Serializer):
    items = StoreItemSerializer(many=True)


class NamespacesSerializer(serializers.Serializer):
    namespaces = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))


class StoreGetOpSerializer(ItemKeySerializer):
    op = serializers.ChoiceField(["get"])
    refresh_ttl = StrictBooleanField(required=False, allow_null=True, default=None)


class StorePutOpSerializer(StorePutSerializer):
    op = serializers.ChoiceField(["put"])
    value = JSONObjectField(allow_null=True, help_text="null deletes the item.")


class StoreSearchOpSerializer(StoreSearchSerializer):
    op = serializers.ChoiceField(["search"])


class StoreNamespacesOpSerializer(StoreNamespacesSerializer):
    op = serializers.ChoiceField(["list_namespaces"])


OP_SERIALIZERS: dict[str, type[StrictSerializer]] = {
    "get": StoreGetOpSerializer,
    "put": StorePutOpSerializer,
    "search": StoreSearchOpSerializer,
    "list_namespaces": StoreNamespacesOpSerializer,
}


@extend_schema_field(
    {"type": "array", "items": {"type": "object", "properties": {"op": {"enum": list(OP_SERIALIZERS)}}}}
)
class OpsField(serializers.Field):
    """The batch's operations, each an object whose `op` names its kind and whose other keys are those of
    the kind's route (`get`: namespace, key, refresh_ttl; `put`: as PUT /store/items, value null deletes;
    `search`: as POST /store/items/search; `list_namespaces`: as POST /store/namespaces)."""

    def to_internal_value(self, data: Any) -> list[dict[str, Any]]:
        if not isinstance(data, list) or not 0 < len(data) <= MAX_BATCH_OPS:
            raise serializers.ValidationError(f"Expected a list of 1 to {MAX_BATCH_OPS} operations.")
        ops: list[dict[str, Any]] = []
        problems: dict[str, Any] = {}
        for index, op in enumerate(data):
            kind = op.get("op") if isinstance(op, dict) else None
            serializer_class = OP_SERIALIZERS.get(kind) if isinstance(kind, str) else None
            if serializer_class is None:
                problems[str(index)] = [f"Each operation needs `op`: one of {', '.join(OP_SERIALIZERS)}."]
                continue
            serializer = serializer_class(data=op)
            if serializer.is_valid():
                ops.append(dict(serializer.validated_data))
            else:
                problems[str(index)] = serializer.errors
        if problems:
            raise serializers.ValidationError(problems)
        return ops

    def to_representation(self, value: Any) -> Any:
        return value


class StoreBatchSerializer(StrictSerializer):
    """`POST store/batch/`: several operations in one request, run in order in one transaction."""

    ops = OpsField()


class StoreBatchResultSerializer(serializers.Serializer):
    results = serializers.ListField(
        child=serializers.JSONField(),
        help_text="One per operation, in order: an item or null (get), null (put), a list of items "
        "(search), a list of namespaces (list_namespaces).",
    )
