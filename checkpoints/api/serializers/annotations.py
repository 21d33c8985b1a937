"""Annotation request and response shapes (docs/dashboard.md, "Findings")."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from checkpoints.api.fields import ClientIdField, StrictCharField, StrictSerializer
from checkpoints.api.output import OutputSerializer
from checkpoints.api.pagination import page_serializer
from checkpoints.api.serializers.checkpoints import StrictChoiceField
from checkpoints.models import Annotation
from checkpoints.models.annotation import MAX_COMMENT_CHARS


class AnnotationCreateSerializer(StrictSerializer):
    """A finding on the thread, or on one of its checkpoints (`checkpoint_id`)."""

    read_only_names = frozenset({"annotation_id", "thread_id", "author", "actor_type", "created_at"})

    comment = StrictCharField(min_length=1, max_length=MAX_COMMENT_CHARS)
    verdict = StrictChoiceField(choices=Annotation.Verdict.choices, required=False, allow_null=True)
    checkpoint_id = ClientIdField(
        required=False, allow_null=True, help_text="A checkpoint of this thread; omitted: on the thread."
    )
    namespace = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="The checkpoint's namespace, needed only when its id is in several namespaces.",
    )


class AnnotationSerializer(OutputSerializer):
    """The API shape of an annotation. The thread's public id comes from the context (`thread_id`)."""

    annotation_id = serializers.UUIDField()
    thread_id = serializers.CharField()
    checkpoint_id = serializers.CharField(allow_null=True, help_text="Null: the annotation is on the thread.")
    namespace = serializers.CharField(allow_null=True, help_text="The checkpoint's; null on the thread.")
    comment = serializers.CharField()
    verdict = serializers.ChoiceField(choices=Annotation.Verdict.choices, allow_null=True)
    actor_type = serializers.CharField(help_text="user or api_key.")
    author = serializers.CharField(source="actor_label", help_text="The dashboard user or the API key.")
    created_at = serializers.DateTimeField()

    @staticmethod
    def value_thread_id(annotation: Annotation, context: dict[str, Any]) -> str:
        return str(context["thread_id"])

    @staticmethod
    def value_checkpoint_id(annotation: Annotation, context: dict[str, Any]) -> str | None:
        return annotation.checkpoint.checkpoint_id if annotation.checkpoint else None

    @staticmethod
    def value_namespace(annotation: Annotation, context: dict[str, Any]) -> str | None:
        return annotation.checkpoint.namespace if annotation.checkpoint else None

    @staticmethod
    def value_verdict(annotation: Annotation, context: dict[str, Any]) -> str | None:
        return annotation.verdict or None


AnnotationPageSerializer = page_serializer("AnnotationPageSerializer", AnnotationSerializer)
