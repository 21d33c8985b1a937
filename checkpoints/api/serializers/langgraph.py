"""Request shapes of the LangGraph saver's endpoints (`checkpoints.api.views.langgraph`)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from checkpoints.api.fields import ClientIdField, JSONObjectField, StrictCharField, StrictSerializer
from checkpoints.api.pagination import page_serializer
from checkpoints.api.serializers.checkpoints import (
    CheckpointCreateSerializer,
    CheckpointSerializer,
    PendingWritesCreateSerializer,
    PendingWriteSerializer,
)
from checkpoints.models import Checkpoint


class InheritSerializer(StrictSerializer):
    """Channels left out of `state.channel_values` because they did not change since `checkpoint_id`."""

    checkpoint_id = ClientIdField()
    channels = JSONObjectField(help_text="{channel: version} as the base checkpoint stores them.")

    def validate_channels(self, value: dict[str, Any]) -> dict[str, Any]:
        for name, version in value.items():
            if isinstance(version, bool) or not isinstance(version, str | int | float):
                raise serializers.ValidationError(f"Version of {name!r} must be a string or a number.")
        return value


class LangGraphCheckpointSaveSerializer(CheckpointCreateSerializer):
    """A checkpoint save (framework langgraph) whose state may inherit unchanged channel values."""

    inherit = InheritSerializer(required=False)

    def validate_framework(self, value: str) -> str:
        if value != Checkpoint.Framework.LANGGRAPH:
            raise serializers.ValidationError("This endpoint saves LangGraph checkpoints only.")
        return value


# Tasks in one request of `POST langgraph/threads/{t}/writes/`.
MAX_WRITE_TASKS = 100


class TaskWritesSerializer(PendingWritesCreateSerializer):
    """One task's writes in a batch: the body of `POST threads/{t}/checkpoints/{c}/writes/`, with the
    checkpoint and namespace its path and query would name."""

    read_only_names = frozenset({"thread_id", "created_at"})

    checkpoint_id = ClientIdField()
    namespace = StrictCharField(required=False, allow_blank=True, max_length=255)


class LangGraphWritesSerializer(StrictSerializer):
    """The pending writes of several tasks of one thread, stored in order, each as the writes endpoint
    stores it."""

    compiled_validation = True  # a hot body (checkpoints.api.compiled_validation)

    tasks = TaskWritesSerializer(many=True, allow_empty=False, max_length=MAX_WRITE_TASKS)  # type: ignore[call-arg]


class RunsDeleteSerializer(StrictSerializer):
    run_ids = serializers.ListField(
        child=StrictCharField(min_length=1, max_length=255), allow_empty=False, max_length=1000
    )

    def validate_run_ids(self, value: Any) -> list[str]:
        if not isinstance(self.initial_data.get("run_ids"), list):
            raise serializers.ValidationError("Expected a list of run ids.")
        return list(value)


class LangGraphTupleSerializer(CheckpointSerializer):
    """A checkpoint with its state and its pending writes (LangGraph's CheckpointTuple), for the schema."""

    pending_writes = PendingWriteSerializer(many=True)


LangGraphTuplePageSerializer = page_serializer("LangGraphTuplePageSerializer", LangGraphTupleSerializer)
