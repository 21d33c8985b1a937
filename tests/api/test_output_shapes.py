"""Response shapes are declared once (checkpoints/api/output.py): the fields drf-spectacular documents are the
ones rendered, formatted by type, with computed values from `value_<name>` methods."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework import serializers

from checkpoints.api.output import OutputSerializer
from checkpoints.api.serializers.jobs import JobSerializer
from checkpoints.api.serializers.messages import MessageSerializer
from checkpoints.api.serializers.threads import ThreadDetailSerializer, ThreadSerializer
from checkpoints.models import Job, Message, Thread

WHEN = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)


class _Inner(OutputSerializer):
    title = serializers.CharField(source="name")


class _Shape(OutputSerializer):
    id = serializers.UUIDField(source="key")
    at = serializers.DateTimeField(allow_null=True)
    note = serializers.CharField(allow_null=True)
    tags = serializers.ListField(child=serializers.CharField())
    inner = _Inner(source="*")
    doubled = serializers.IntegerField()

    @staticmethod
    def value_doubled(obj: Any, context: dict[str, Any]) -> int:
        return int(obj.n * context.get("factor", 2))


class _Row:
    key = uuid.UUID(int=7)
    at = WHEN
    note = ""
    tags = ["a"]
    name = "row"
    n = 21


def test_each_field_is_rendered_by_its_type_and_computed_values_see_the_context() -> None:
    expected = {
        "id": "00000000-0000-0000-0000-000000000007",
        "at": "2026-01-02T03:04:05.000006Z",
        "note": None,  # a nullable string: empty is null
        "tags": ["a"],
        "inner": {"title": "row"},
        "doubled": 42,
    }
    assert _Shape.render(_Row()) == expected
    assert _Shape.render_many([_Row(), _Row()], {"factor": 1}) == [{**expected, "doubled": 21}] * 2
    assert _Shape(_Row()).data == expected  # DRF's own path renders the same
    assert _Shape.render(None) is None


def test_a_source_that_is_not_an_attribute_name_is_refused() -> None:
    class Dotted(OutputSerializer):
        name = serializers.CharField(source="thread.name")

    with pytest.raises(ValueError, match=r"Dotted\.name: source must be an attribute name"):
        Dotted.render(object())


def test_the_documented_fields_are_the_rendered_keys() -> None:
    thread = Thread(thread_id="t", user_id="", name="", tags=[], metadata={}, scope={}, created_at=WHEN)
    thread.updated_at = WHEN
    assert list(ThreadSerializer.render(thread) or {}) == list(ThreadSerializer().fields)
    for name in ThreadDetailSerializer().fields.keys() - ThreadSerializer().fields.keys():
        setattr(thread, name, None)  # the annotations of `ThreadQuerySet.with_stats` and the idle expiry
    assert list(ThreadDetailSerializer.render(thread) or {}) == list(ThreadDetailSerializer().fields)
    message = Message(message_id="m", seq=1, role="user", content="hi", metadata={}, created_at=WHEN)
    assert list(MessageSerializer.render(message, {"thread_id": "t"}) or {}) == list(
        MessageSerializer().fields
    )
    job = Job(job_id=uuid.uuid4(), kind="sweep", status="queued", params={}, created_at=WHEN)
    assert list(JobSerializer.render(job) or {}) == list(JobSerializer().fields)
