"""`model_rows.adapted` gives a statement exactly the values Django's own per-field preparation gives,
skipping it only where that would hand the value back as it is."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection, models

from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.storage.model_rows import adapted, model_fields, preparation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("part_on_and_off")]
PART = "prepared_statements"  # run on and off: checkpoints.parts


def prepared_by_django(instance: models.Model, fields: list[models.Field[Any, Any]]) -> list[Any]:
    return [field.get_db_prep_save(getattr(instance, field.attname), connection) for field in fields]


def comparable(values: list[Any]) -> list[tuple[type, Any]]:
    """Each value with its exact type (psycopg's integer wrappers equal plain integers), and what psycopg's
    JSON wrappers wrap (they compare by identity)."""
    return [(type(value), value.obj if hasattr(value, "obj") else value) for value in values]


@pytest.fixture
def checkpoint() -> Checkpoint:
    workspace = Workspace.objects.create(slug="values")
    thread = Thread.objects.create(workspace=workspace, thread_id="t")
    return Checkpoint(
        workspace=workspace,
        thread=thread,
        checkpoint_id="c",
        parent_checkpoint_id=None,
        agent_id="agent é",
        framework=Checkpoint.Framework.LANGGRAPH,  # a str subclass: prepared by Django
        step_index=3,
        state='{"a":1}',
        context="{}",
        metadata="{}",
        checksum="0" * 64,
        size_bytes=11,
        created_at=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        expires_at=None,
        pinned=True,
    )


@pytest.mark.parametrize("model", [Checkpoint, Thread])
def test_every_field_is_prepared_as_django_prepares_it(checkpoint: Checkpoint, model: type[Any]) -> None:
    instance = checkpoint if model is Checkpoint else checkpoint.thread
    fields = model_fields(model, with_pk=False)
    assert comparable(adapted(instance, preparation(fields))) == comparable(
        prepared_by_django(instance, fields)
    )


def test_values_of_another_type_still_go_through_django(checkpoint: Checkpoint) -> None:
    fields = model_fields(Checkpoint, with_pk=False)
    checkpoint.agent_id = 5  # Django's CharField makes it "5"
    checkpoint.pinned = 1  # type: ignore[assignment] # and BooleanField True
    values = adapted(checkpoint, preparation(fields))
    assert comparable(values) == comparable(prepared_by_django(checkpoint, fields))
    names = [field.attname for field in fields]
    assert values[names.index("agent_id")] == "5" and values[names.index("pinned")] is True


def test_only_djangos_own_field_classes_are_skipped() -> None:
    class Shouting(models.CharField):
        def get_prep_value(self, value: Any) -> Any:
            return None if value is None else str(value).upper()

    shouting = Shouting(max_length=8)
    shouting.set_attributes_from_name("name")
    plain = Checkpoint._meta.get_field("agent_id")
    when = Checkpoint._meta.get_field("created_at")
    thread = Checkpoint._meta.get_field("thread")
    integer = Checkpoint._meta.get_field("step_index")
    kept = {
        prepared.field: prepared.kept for prepared in preparation([shouting, plain, when, thread, integer])
    }
    assert kept == {shouting: None, plain: str, when: None, thread: None, integer: None}
