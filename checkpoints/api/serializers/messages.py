"""Message request and response shapes (docs/threads.md)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from checkpoints.api.fields import ClientIdField, StrictCharField, StrictSerializer
from checkpoints.api.output import OutputSerializer
from checkpoints.api.serializers.checkpoints import StrictChoiceField
from checkpoints.api.serializers.threads import JSONDocumentField, JSONObjectListField
from checkpoints.models import Message
from checkpoints.services.messages import MAX_BATCH, MAX_CONTENT_CHARS


class ContentBlocksField(JSONObjectListField):
    """A list of content blocks: objects with a string `type`; a "text" block carries its `text` string."""

    def to_internal_value(self, data: Any) -> Any:
        blocks = super().to_internal_value(data)
        for index, block in enumerate(blocks):
            if not isinstance(block.get("type"), str) or not block["type"]:
                raise serializers.ValidationError(f"Block {index} needs a non-empty string `type`.")
            if block["type"] == "text" and not isinstance(block.get("text"), str):
                raise serializers.ValidationError(f"Text block {index} needs a string `text`.")
        return blocks


class MessageInSerializer(StrictSerializer):
    """One message to append. seq, created_at and thread_id are the server's."""

    read_only_names = frozenset({"seq", "created_at", "thread_id"})

    message_id = ClientIdField(required=False, help_text="Your id for retries (default: a UUIDv7).")
    role = StrictChoiceField(choices=Message.Role.choices)
    content = StrictCharField(required=False, allow_blank=True, max_length=MAX_CONTENT_CHARS)
    content_blocks = ContentBlocksField(required=False, allow_null=True)
    tool_calls = JSONObjectListField(required=False, allow_null=True)
    tool_call_id = StrictCharField(required=False, allow_null=True, min_length=1, max_length=128)
    name = StrictCharField(required=False, allow_null=True, min_length=1, max_length=255)
    usage = JSONDocumentField(required=False, allow_null=True, help_text="Token counts.")
    metadata = JSONDocumentField(required=False)


class MessagesAppendSerializer(StrictSerializer):
    messages = MessageInSerializer(many=True, allow_empty=False, max_length=MAX_BATCH)  # type: ignore[call-arg]


class MessageSerializer(OutputSerializer):
    """The API shape of a message (absent optional strings are null). The thread's public id comes from the
    context (`thread_id`) or, across threads, from `MessageQuerySet.with_thread_id`."""

    thread_id = serializers.CharField()
    message_id = serializers.CharField()
    seq = serializers.IntegerField()
    role = serializers.ChoiceField(choices=Message.Role.choices)
    content = serializers.CharField()
    content_blocks = serializers.ListField(child=serializers.DictField(), allow_null=True)
    tool_calls = serializers.ListField(child=serializers.DictField(), allow_null=True)
    tool_call_id = serializers.CharField(allow_null=True)
    name = serializers.CharField(allow_null=True)
    usage = serializers.DictField(allow_null=True)
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()

    @staticmethod
    def value_thread_id(message: Message, context: dict[str, Any]) -> str:
        thread_id = context.get("thread_id")
        return thread_id if thread_id is not None else message.thread_public_id  # type: ignore[attr-defined]


class MessageListSerializer(serializers.Serializer):
    results = MessageSerializer(many=True)


class MessagePageSerializer(MessageListSerializer):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
