"""Retention policy and preview shapes: `GET/PUT retention/`, `POST retention/preview/`
(docs/retention.md)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from checkpoints.api.fields import StrictIntegerField, StrictSerializer, TtlSecondsField

_INT32_MAX = 2**31 - 1


class _RuleCountField(StrictIntegerField):
    """A rule's count: a whole number from 1 to what the policy's integer column holds; null switches the
    rule off."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", _INT32_MAX)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)


class RetentionPolicyUpdateSerializer(StrictSerializer):
    """Body of `PUT retention/`: any of the policy fields; those left out keep their value.

    Every value is a whole number > 0. null switches a rule off (for the tombstone retention: tombstones
    are kept forever)."""

    default_ttl_seconds = TtlSecondsField(
        required=False, help_text="TTL given to checkpoints saved without one; null: no expiry."
    )
    keep_latest = _RuleCountField(
        required=False,
        help_text="Keep the newest N checkpoints per thread+namespace (older: tombstones); null: all.",
    )
    thread_idle_ttl_seconds = TtlSecondsField(
        required=False, help_text="Delete threads (not pinned) idle for this long; null: never."
    )
    tombstone_retention_seconds = TtlSecondsField(
        required=False,
        help_text="Hard-delete tombstones this long after they expired; null: keep them forever.",
    )
    auto_summarize_every = _RuleCountField(
        required=False, help_text="Summarise a thread into its medallion every N new messages; null: never."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(f"Send at least one of: {', '.join(self.fields)}.")
        return attrs


class RetentionPolicySerializer(serializers.Serializer):
    """The workspace's retention policy (null: the rule is off)."""

    default_ttl_seconds = serializers.IntegerField(allow_null=True)
    keep_latest = serializers.IntegerField(allow_null=True)
    thread_idle_ttl_seconds = serializers.IntegerField(allow_null=True)
    tombstone_retention_seconds = serializers.IntegerField(allow_null=True)
    auto_summarize_every = serializers.IntegerField(allow_null=True)


class RetentionPreviewRequestSerializer(StrictSerializer):
    """`POST retention/preview/` takes no parameters (an empty body or `{}`)."""


# What one rule would remove: how many, and a sample of them (each subclass declares its `sample`). A comment,
# not a docstring: the OpenAPI document would show it on every rule.
class _RuleOutcome(serializers.Serializer):
    count = serializers.IntegerField()


class _CheckpointRef(serializers.Serializer):
    thread_id = serializers.CharField()
    namespace = serializers.CharField()
    checkpoint_id = serializers.CharField()


class _CheckpointRule(_RuleOutcome):
    sample = _CheckpointRef(many=True)


class _ThreadRef(serializers.Serializer):
    thread_id = serializers.CharField()


class _ThreadRule(_RuleOutcome):
    sample = _ThreadRef(many=True)


class _StoreItemRef(serializers.Serializer):
    namespace = serializers.ListField(child=serializers.CharField())
    key = serializers.CharField()


class _StoreItemRule(_RuleOutcome):
    sample = _StoreItemRef(many=True)


class RetentionPreviewSerializer(serializers.Serializer):
    """What retention would do now: counts and a sample of ids per rule."""

    as_of = serializers.DateTimeField()
    policy = RetentionPolicySerializer()
    expired = _CheckpointRule(help_text="Next sweep: checkpoints past their TTL that become tombstones.")
    pruned = _CheckpointRule(help_text="Next sweep: checkpoints beyond keep_latest that become tombstones.")
    purged = _CheckpointRule(help_text="Next tombstone purge: tombstones hard-deleted.")
    idle_threads = _ThreadRule(
        help_text="Next idle-thread expiry: threads deleted with everything under them."
    )
    store_items = _StoreItemRule(help_text="Next store sweep: store items past their TTL, deleted.")
