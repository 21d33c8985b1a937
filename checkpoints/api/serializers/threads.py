"""Thread request and response shapes (docs/threads.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from checkpoints.api.fields import (
    AnyJSONField,
    ClientIdField,
    NameField,
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
    StringListField,
    TtlSecondsField,
)
from checkpoints.api.output import OutputSerializer
from checkpoints.api.pagination import page_serializer
from checkpoints.api.serializers.checkpoints import StrictChoiceField
from checkpoints.models import Thread
from checkpoints.services.idle_expiry import EXPIRY_SOURCES
from checkpoints.services.threads import PRUNE_STRATEGIES


def nul_path(value: Any, path: str = "") -> str | None:
    """The path of the first string or key holding U+0000 in a JSON value, or None. PostgreSQL's jsonb (and
    text) cannot store NUL, so it is refused up front rather than left to fail in the database."""
    if isinstance(value, str):
        return (path or "(value)") if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if "\x00" in key:
                return where
            found = nul_path(item, where)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = nul_path(item, f"{path}[{index}]")
            if found:
                return found
    return None


@extend_schema_field(OpenApiTypes.OBJECT)
class JSONDocumentField(AnyJSONField):
    """A JSON object without NUL characters anywhere."""

    def check_shape(self, data: Any) -> None:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Expected a JSON object.")

    def to_internal_value(self, data: Any) -> Any:
        self.check_shape(data)
        where = nul_path(data)
        if where:
            raise serializers.ValidationError(f"NUL characters are not allowed (at {where}).")
        return data


@extend_schema_field({"type": "array", "items": {"type": "object"}})
class JSONObjectListField(JSONDocumentField):
    """A list of JSON objects without NUL characters anywhere."""

    def check_shape(self, data: Any) -> None:
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise serializers.ValidationError("Expected a list of JSON objects.")


class ScopeSerializer(StrictSerializer):
    """The medallion scope a thread is summarised into (missing lists are empty)."""

    graph_nodes = StringListField(required=False)
    tags = StringListField(required=False)


# Keys of the thread representation a client may echo back; refused as read-only.
THREAD_READ_ONLY = frozenset(
    {
        "expires_at",
        "forked_from",
        "created_at",
        "updated_at",
        "message_count",
        "checkpoint_count",
        "storage_bytes",
        "storage",
        "head",
        "effective_expires_at",
        "expiry_source",
        "workspace",
    }
)


class ThreadUpdateSerializer(StrictSerializer):
    """Body of `PATCH threads/{id}/`: any of these fields; metadata and scope are replaced whole."""

    read_only_names = THREAD_READ_ONLY | {"thread_id"}

    name = StrictCharField(required=False, allow_blank=True, max_length=255)
    user_id = NameField(required=False, allow_blank=True, min_length=0)
    tags = StringListField(required=False)
    metadata = JSONDocumentField(required=False)
    scope = ScopeSerializer(required=False)
    ttl_seconds = TtlSecondsField(required=False, help_text="Idle expiry in seconds; null for none.")
    pinned = StrictBooleanField(required=False, help_text="Pinned threads never expire.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Send at least one field to change.")
        return attrs


class ThreadCreateSerializer(ThreadUpdateSerializer):
    """Body of `POST threads/` (every field optional; thread_id defaults to a UUIDv7)."""

    read_only_names = THREAD_READ_ONLY

    thread_id = ClientIdField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return attrs


class ThreadForkSerializer(StrictSerializer):
    checkpoint_id = ClientIdField(required=False, help_text="Default: the head of the namespace.")
    namespace = StrictCharField(required=False, allow_blank=True, max_length=255)
    thread_id = ClientIdField(required=False, help_text="The new thread's id (default: a UUIDv7).")
    name = StrictCharField(required=False, allow_blank=True, max_length=255)


class ThreadCopySerializer(StrictSerializer):
    thread_id = ClientIdField(help_text="The new thread's id; 409 if it exists.")


class ThreadPruneSerializer(StrictSerializer):
    strategy = StrictChoiceField(choices=PRUNE_STRATEGIES)


class ScopeOutSerializer(serializers.Serializer):
    """The stored scope, rendered as stored (documented here)."""

    graph_nodes = serializers.ListField(child=serializers.CharField())
    tags = serializers.ListField(child=serializers.CharField())


class ForkedFromSerializer(OutputSerializer):
    """Where a fork came from; rendered from the fork itself (`ThreadQuerySet.with_fork_source`)."""

    thread_id = serializers.CharField(allow_null=True, help_text="Null once the source thread is deleted.")
    checkpoint_id = serializers.CharField(source="forked_from_checkpoint_id")
    namespace = serializers.CharField(source="forked_from_namespace")

    @staticmethod
    def value_thread_id(thread: Thread, context: dict[str, Any]) -> str | None:
        # None once the source thread was deleted: the fork outlives it.
        return getattr(thread, "forked_from_thread_id", None)


class ThreadSerializer(OutputSerializer):
    """The API shape of a thread in a list. Needs `forked_from_thread_id` (ThreadQuerySet.with_fork_source)
    when the thread is a fork."""

    thread_id = serializers.CharField()
    user_id = serializers.CharField()
    name = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    metadata = serializers.DictField()
    scope = ScopeOutSerializer()
    ttl_seconds = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(
        allow_null=True,
        help_text="The thread's own idle expiry (its last write + ttl_seconds); null without ttl_seconds. "
        "The detail's effective_expires_at is the date the idle-thread expiry acts on.",
    )
    pinned = serializers.BooleanField()
    forked_from = ForkedFromSerializer(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    @staticmethod
    def value_forked_from(thread: Thread, context: dict[str, Any]) -> dict[str, Any] | None:
        return ForkedFromSerializer.render(thread, context) if thread.forked_from_checkpoint_id else None


class StorageSummarySerializer(serializers.Serializer):
    """What the thread's checkpoint payloads, pending writes and messages are whole (logical) and as
    stored: large documents are stored packed, each distinct part once."""

    logical_bytes = serializers.IntegerField(
        help_text="As the documents are whole: `totals.bytes` of `storage/` (= storage_bytes)."
    )
    stored_bytes = serializers.IntegerField(
        help_text="As stored (packed documents' skeletons plus the distinct parts they name): "
        "`totals.stored_bytes` of `storage/`."
    )


class ThreadDetailSerializer(ThreadSerializer):
    """A thread with the counts of `ThreadQuerySet.with_stats`, its storage, logical and as stored, and when
    the idle-thread expiry deletes it (`idle_expiry.with_idle_expiry`; docs/retention.md)."""

    message_count = serializers.IntegerField()
    checkpoint_count = serializers.IntegerField(help_text="Readable checkpoints, every namespace.")
    storage_bytes = serializers.IntegerField(help_text="The `totals.bytes` of `storage/` (logical bytes).")
    storage = StorageSummarySerializer()
    head = serializers.CharField(allow_null=True, help_text="checkpoint_id of the root namespace's head.")
    effective_expires_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the idle-thread expiry deletes this thread, by the rule in `expiry_source`; null: "
        "never (pinned, or no idle rule applies). Unlike `expires_at` (the thread's own idle expiry), this "
        "is the date the expiry acts on.",
    )
    expiry_source = serializers.ChoiceField(
        choices=EXPIRY_SOURCES,
        allow_null=True,
        help_text="The rule that sets `effective_expires_at`: `thread` (its own `ttl_seconds`), `workspace` "
        "(the workspace's `thread_idle_ttl_seconds`), `pinned` (the thread is pinned or holds a live pinned "
        "checkpoint: never deleted as idle), or null (no idle rule applies).",
    )


ThreadPageSerializer = page_serializer("ThreadPageSerializer", ThreadSerializer)


class PruneResultSerializer(serializers.Serializer):
    pruned = serializers.IntegerField()


class NamespaceStorageSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    checkpoints = serializers.IntegerField(help_text="Checkpoints whose payload is still stored.")
    tombstones = serializers.IntegerField()
    pending_writes = serializers.IntegerField()
    state_bytes = serializers.IntegerField()
    writes_bytes = serializers.IntegerField()


class MessageStorageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    bytes = serializers.IntegerField()


class PartStorageSerializer(serializers.Serializer):
    """The distinct parts the thread's packed documents name, each counted once."""

    count = serializers.IntegerField()
    bytes = serializers.IntegerField()


class StorageTotalsSerializer(serializers.Serializer):
    state_bytes = serializers.IntegerField(help_text="Checkpoint payloads as they are whole (logical).")
    writes_bytes = serializers.IntegerField()
    messages_bytes = serializers.IntegerField()
    bytes = serializers.IntegerField(help_text="Logical: state_bytes + writes_bytes + messages_bytes.")
    state_stored_bytes = serializers.IntegerField(
        help_text="Checkpoint payloads as stored: the rows' text (skeletons of packed documents) plus "
        "`parts.bytes`."
    )
    stored_bytes = serializers.IntegerField(help_text="state_stored_bytes + writes_bytes + messages_bytes.")


class ThreadStorageSerializer(serializers.Serializer):
    thread_id = serializers.CharField()
    namespaces = NamespaceStorageSerializer(many=True)
    messages = MessageStorageSerializer()
    parts = PartStorageSerializer()
    totals = StorageTotalsSerializer()
