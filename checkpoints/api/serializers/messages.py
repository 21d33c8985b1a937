"""Message request and response shapes (SPEC section 5, the message rows)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from checkpoints.api.fields import ClientIdField, StrictCharField, StrictSerializer
from checkpoints.api.serializers.checkpoints import StrictChoiceField
from checkpoints.api.serializers.threads import JSONDocumentField, JSONObjectListField
from checkpoints.integrity import format_timestamp
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


def message_representation(message: Message, thread_id: str) -> dict[str, Any]:
    """The API shape of a message (absent optional strings are null)."""
    return {
        "thread_id": thread_id,
        "message_id": message.message_id,
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "content_blocks": message.content_blocks,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id or None,
        "name": message.name or None,
        "usage": message.usage,
        "metadata": message.metadata,
        "created_at": format_timestamp(message.created_at),
    }


# Declared for the OpenAPI schema; views render with message_representation (tests check they agree).
class MessageSerializer(serializers.Serializer):
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


class MessageListSerializer(serializers.Serializer):
    results = MessageSerializer(many=True)


class MessagePageSerializer(MessageListSerializer):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
