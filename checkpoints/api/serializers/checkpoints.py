"""Checkpoint request and response shapes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from rest_framework import serializers

from checkpoints.api.fields import (
    AnyJSONField,
    ClientIdField,
    JSONObjectField,
    NameField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    TimestampField,
    TtlSecondsField,
)
from checkpoints.api.pagination import page_serializer
from checkpoints.api.renderers import RawJSON, json_object, json_scalar
from checkpoints.exceptions import ChecksumMismatch
from checkpoints.integrity import CHECKSUM_FIELDS, format_timestamp
from checkpoints.models import Checkpoint, PendingWrite
from checkpoints.packing import is_packed

CHECKSUM_FORM = re.compile(r"^[0-9a-f]{64}\Z")  # a lowercase hex SHA-256 digest


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


class ChecksumField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not CHECKSUM_FORM.match(value):
            raise serializers.ValidationError("Expected a lowercase hex SHA-256 digest (64 characters).")
        return value


def _optional_name(**kwargs: Any) -> StrictCharField:
    return StrictCharField(required=False, allow_null=True, min_length=1, max_length=255, **kwargs)


# Every key of the checkpoint representation (see checkpoint_representation): the immutable record plus what
# the server derives or may change later.
CHECKPOINT_FIELDS = frozenset(CHECKSUM_FIELDS) | {
    "written_by",
    "message_seq",
    "checksum",
    "size_bytes",
    "expires_at",
    "pinned",
    "expired_at",
}


class CheckpointStateSerializer(StrictSerializer):
    """Body of `PUT threads/{id}/state/`: a checkpoint whose parent is the current head."""

    read_only_names = CHECKPOINT_FIELDS
    compiled_validation = True  # a hot body (checkpoints.api.compiled_validation)

    checkpoint_id = ClientIdField(required=False)
    namespace = StrictCharField(required=False, allow_blank=True, max_length=255)
    agent_id = NameField()
    framework = StrictChoiceField(choices=Checkpoint.Framework.choices, required=False)
    schema_version = StrictCharField(required=False, min_length=1, max_length=32)
    step_index = StrictIntegerField(required=False)
    step_name = _optional_name()
    run_id = _optional_name()
    state = AnyJSONField()
    # Field named like Serializer.context: DRF moves declared fields off the class, the stubs cannot know.
    context = JSONObjectField(required=False)  # type: ignore[assignment]
    metadata = JSONObjectField(required=False)
    ttl_seconds = TtlSecondsField(required=False)
    pinned = StrictBooleanField(required=False)
    checksum = ChecksumField(required=False)
    created_at = TimestampField(
        required=False,
        help_text="Optional, for clients that hash the whole record before sending it (with `checksum`).",
    )

    def validate_state(self, value: Any) -> Any:
        if value is None:
            raise serializers.ValidationError("This field may not be null.")
        return value


class CheckpointCreateSerializer(CheckpointStateSerializer):
    """Body of `POST threads/{id}/checkpoints/`."""

    parent_id = ClientIdField(required=False, allow_null=True)


class CheckpointTtlSerializer(StrictSerializer):
    read_only_names = CHECKPOINT_FIELDS

    ttl_seconds = TtlSecondsField(required=False)
    pinned = StrictBooleanField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                "Send ttl_seconds (a number of seconds, or null) and/or pinned."
            )
        return attrs


class CheckpointHandoffSerializer(StrictSerializer):
    read_only_names = CHECKPOINT_FIELDS

    target_agent_id = NameField()
    # Field named like Serializer.context: DRF moves declared fields off the class, the stubs cannot know.
    context = JSONObjectField(required=False)  # type: ignore[assignment]
    ttl_seconds = TtlSecondsField(required=False)


class PendingWriteItemSerializer(StrictSerializer):
    read_only_names = frozenset({"task_id", "task_path", "created_at"})

    channel = StrictCharField(min_length=1, max_length=255)
    # LangGraph writes None to channels too.
    value = AnyJSONField(allow_null=True)
    type = StrictCharField(required=False, allow_blank=True, max_length=64)
    idx = StrictIntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)


class PendingWritesCreateSerializer(StrictSerializer):
    read_only_names = frozenset({"thread_id", "namespace", "checkpoint_id", "created_at"})
    compiled_validation = True  # a hot body (checkpoints.api.compiled_validation)

    task_id = StrictCharField(min_length=1, max_length=255)
    task_path = StrictCharField(required=False, allow_blank=True, max_length=1024)
    writes = PendingWriteItemSerializer(many=True, allow_empty=False, max_length=1000)  # type: ignore[call-arg]


def _timestamp(value: datetime | None) -> str | None:
    return format_timestamp(value) if value is not None else None


def checkpoint_representation(
    checkpoint: Checkpoint,
    *,
    include_state: bool,
    now: datetime,
    thread_id: str | None = None,
    more: Iterable[tuple[str, str]] = (),
) -> RawJSON:
    """The API shape of a checkpoint, as JSON text (with `more` members after its own): stored JSON is
    spliced in raw, never re-serialised.

    Payloads are null once a checkpoint is unreadable (a tombstone, or past its expiry before any sweep).
    """
    readable = checkpoint.is_readable(now)
    payloads = []
    if include_state:
        for name in ("state", "context", "metadata"):
            text = getattr(checkpoint, name) if readable else None
            payloads.append((name, "null" if text is None else text))
    members = [
        ("thread_id", json_scalar(thread_id or checkpoint.thread.thread_id)),
        ("namespace", json_scalar(checkpoint.namespace)),
        ("checkpoint_id", json_scalar(checkpoint.checkpoint_id)),
        ("parent_id", json_scalar(checkpoint.parent_checkpoint_id)),
        ("agent_id", json_scalar(checkpoint.agent_id)),
        ("framework", json_scalar(checkpoint.framework)),
        ("schema_version", json_scalar(checkpoint.schema_version)),
        ("step_index", json_scalar(checkpoint.step_index)),
        ("step_name", json_scalar(checkpoint.step_name)),
        ("run_id", json_scalar(checkpoint.run_id)),
        *payloads,
        ("handoff_target", json_scalar(checkpoint.handoff_target)),
        ("handoff_from", json_scalar(checkpoint.handoff_from)),
        ("written_by", json_scalar(checkpoint.written_by)),
        ("message_seq", json_scalar(checkpoint.message_seq)),
        ("checksum", json_scalar(checkpoint.checksum)),
        ("size_bytes", json_scalar(checkpoint.size_bytes)),
        ("created_at", json_scalar(_timestamp(checkpoint.created_at))),
        ("expires_at", json_scalar(_timestamp(checkpoint.expires_at))),
        ("pinned", json_scalar(checkpoint.pinned)),
        ("expired_at", json_scalar(_timestamp(checkpoint.effective_expired_at(now)))),
        *more,
    ]
    return json_object(members)


class CheckpointSerializer(serializers.Serializer):
    """The checkpoint representation, declared for the OpenAPI schema. Views render with
    `checkpoint_representation` (fast, raw JSON splicing); tests check the two agree."""

    thread_id = serializers.CharField()
    namespace = serializers.CharField()
    checkpoint_id = serializers.CharField()
    parent_id = serializers.CharField(allow_null=True)
    agent_id = serializers.CharField()
    framework = serializers.ChoiceField(choices=Checkpoint.Framework.choices)
    schema_version = serializers.CharField()
    step_index = serializers.IntegerField()
    step_name = serializers.CharField(allow_null=True)
    run_id = serializers.CharField(allow_null=True)
    state = serializers.JSONField(
        allow_null=True, required=False, help_text="Omitted in lists without include_state."
    )
    context = serializers.JSONField(allow_null=True, required=False)  # type: ignore[assignment]
    metadata = serializers.JSONField(allow_null=True, required=False)
    handoff_target = serializers.CharField(allow_null=True)
    handoff_from = serializers.CharField(allow_null=True)
    written_by = serializers.CharField(
        allow_blank=True,
        help_text=(
            'Who wrote it: "key:<prefix>" (an API key) or "user:<username>" (the dashboard); "" if not '
            "recorded. Outside the checksum."
        ),
    )
    message_seq = serializers.IntegerField()
    checksum = serializers.CharField()
    size_bytes = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    pinned = serializers.BooleanField()
    expired_at = serializers.DateTimeField(allow_null=True)


CheckpointPageSerializer = page_serializer("CheckpointPageSerializer", CheckpointSerializer)


class FieldChangeSerializer(serializers.Serializer):
    field = serializers.CharField()
    before = serializers.JSONField(allow_null=True, help_text="null: absent (or no checkpoint to diff from).")
    after = serializers.JSONField(allow_null=True)


class DiffSerializer(serializers.Serializer):
    checkpoint_id = serializers.CharField()
    against = serializers.CharField(allow_null=True, help_text="The checkpoint diffed from (null: none).")
    against_thread_id = serializers.CharField(allow_null=True)
    changed_fields = FieldChangeSerializer(
        many=True,
        help_text=(
            "The record's fields that differ (agent_id, step_index, step_name, parent_id, "
            "namespace, run_id, handoff_from), before and after; the documents' changes are in `patch`."
        ),
    )
    patch = serializers.ListField(
        child=serializers.DictField(), help_text="RFC 6902 operations turning `against` into this checkpoint."
    )


def pending_write_representation(write: PendingWrite) -> RawJSON:
    if is_packed(write.value):  # still packed once read: a part it names is missing (docs/storage.md)
        raise ChecksumMismatch(
            f"Pending write {write.task_id!r}/{write.idx} of checkpoint {write.checkpoint_id!r} names a "
            "stored part that is missing: it was altered after it was written.",
            {"checkpoint_id": write.checkpoint_id, "task_id": write.task_id, "idx": write.idx},
        )
    return json_object(
        [
            ("task_id", json_scalar(write.task_id)),
            ("task_path", json_scalar(write.task_path)),
            ("idx", json_scalar(write.idx)),
            ("channel", json_scalar(write.channel)),
            ("type", json_scalar(write.type)),
            ("value", write.value),
            ("created_at", json_scalar(_timestamp(write.created_at))),
        ]
    )


class PendingWriteSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    task_path = serializers.CharField()
    idx = serializers.IntegerField()
    channel = serializers.CharField()
    type = serializers.CharField()
    value = serializers.JSONField()
    created_at = serializers.DateTimeField()


class PendingWriteListSerializer(serializers.Serializer):
    results = PendingWriteSerializer(many=True)
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
