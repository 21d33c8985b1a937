"""`model_copy` gives what `copy.copy` gives a model instance, with the related objects it names copied;
`model_part` and `model_from_row` what `Model.from_db` gives; `model_new` what the model's constructor
gives."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from django.db.models import Model
from django.db.models.signals import post_init

from checkpoints.models import ApiKey, Checkpoint, Thread, Workspace
from checkpoints.models.copying import model_copy, model_from_row, model_new, model_part, relate_loaded
from checkpoints.services.workspaces import api_key_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def key() -> ApiKey:
    api_key_create(workspace=Workspace.objects.create(slug="copying"), name="k", scope="write")
    return ApiKey.objects.select_related("workspace").get(name="k")


def test_a_copy_has_the_same_fields_and_state_as_copy_copy(key: ApiKey) -> None:
    ours, theirs = model_copy(key), copy.copy(key)
    assert type(ours) is ApiKey
    # copy.copy also leaves pickling's `_django_version` marker on the copy.
    assert {k: v for k, v in vars(ours).items() if k != "_state"} == {
        k: v for k, v in vars(theirs).items() if k not in ("_state", "_django_version")
    }
    assert (
        (ours._state.db, ours._state.adding) == (theirs._state.db, theirs._state.adding) == ("default", False)
    )
    assert ours._state.fields_cache == theirs._state.fields_cache
    assert ours.workspace is key.workspace  # not named: shared, as copy.copy shares it


def test_changing_a_copy_leaves_the_original_alone(key: ApiKey) -> None:
    duplicate = model_copy(key, "workspace")
    duplicate.name = "changed"
    duplicate.window_hits = ("counter", 1)
    duplicate.workspace.default_ttl_seconds = 5
    duplicate._state.fields_cache["extra"] = object()
    assert duplicate.workspace is not key.workspace
    assert duplicate.workspace.pk == key.workspace_id
    assert (key.name, key.workspace.default_ttl_seconds) == ("k", None)
    assert key.window_hits is None
    assert "extra" not in key._state.fields_cache


def test_a_copy_saves_like_the_original(key: ApiKey) -> None:
    duplicate = model_copy(key, "workspace")
    duplicate.name = "renamed"
    duplicate.save(update_fields=["name"])
    assert ApiKey.objects.get(pk=key.pk).name == "renamed"
    assert ApiKey.objects.count() == 1


def test_a_part_is_what_from_db_makes_of_those_fields(key: ApiKey) -> None:
    fields = ["id", "workspace_id", "name", "prefix"]  # from_db takes them in the model's order
    assert fields == [f.attname for f in ApiKey._meta.concrete_fields if f.attname in fields]
    ours = model_part(key, fields)
    theirs = ApiKey.from_db("default", fields, [getattr(key, f) for f in fields])
    assert type(ours) is ApiKey
    assert {k: v for k, v in vars(ours).items() if k != "_state"} == {
        k: v for k, v in vars(theirs).items() if k != "_state"
    }
    assert (ours._state.db, ours._state.adding, ours._state.fields_cache) == ("default", False, {})
    assert (
        ours.get_deferred_fields()
        == theirs.get_deferred_fields()
        == {f.attname for f in ApiKey._meta.concrete_fields} - set(fields)
    )
    assert ours.scope == key.scope  # a deferred field is read from the database, as Django does


def _whole_row(key: ApiKey) -> tuple[list[str], list[object]]:
    attnames = [f.attname for f in ApiKey._meta.concrete_fields]
    return attnames, [getattr(key, name) for name in attnames]


def test_a_row_is_what_from_db_makes_of_it(key: ApiKey) -> None:
    attnames, values = _whole_row(key)
    ours = model_from_row(ApiKey, "default", attnames, values)
    theirs = ApiKey.from_db("default", attnames, values)
    assert type(ours) is ApiKey
    assert list(vars(ours)) == list(vars(theirs))  # the same attributes, set in the same order
    assert {k: v for k, v in vars(ours).items() if k != "_state"} == {
        k: v for k, v in vars(theirs).items() if k != "_state"
    }
    assert (ours._state.db, ours._state.adding, ours._state.fields_cache) == ("default", False, {})
    assert ours.get_deferred_fields() == theirs.get_deferred_fields() == set()
    assert ours.workspace == key.workspace  # relations load as from an ORM query
    ours.name = "saved"
    ours.save(update_fields=["name"])
    assert ApiKey.objects.get(pk=key.pk).name == "saved"


@contextmanager
def post_init_received(model: type[Model]) -> Iterator[list[object]]:
    """The instances `post_init` is sent for while a receiver for `model` is connected."""
    received: list[object] = []

    def on_init(sender: type, instance: object, **kwargs: object) -> None:
        received.append(instance)

    post_init.connect(on_init, sender=model)
    try:
        yield received
    finally:
        post_init.disconnect(on_init, sender=model)


def test_a_row_goes_through_from_db_where_init_signals_are_received(key: ApiKey) -> None:
    with post_init_received(ApiKey) as received:
        loaded = model_from_row(ApiKey, "default", *_whole_row(key))
    assert len(received) == 1 and received[0] is loaded
    model_from_row(ApiKey, "default", *_whole_row(key))  # disconnected: built directly, no signal
    assert len(received) == 1


def test_a_row_must_hold_every_field(key: ApiKey) -> None:
    attnames, values = _whole_row(key)
    with pytest.raises(ValueError):
        model_from_row(ApiKey, "default", attnames, values[:-1])


def _checkpoint_fields(key: ApiKey) -> dict[str, object]:
    thread = Thread.objects.create(workspace=key.workspace, thread_id="t")
    return {
        "workspace": key.workspace,
        "thread": thread,
        "checkpoint_id": "c",
        "agent_id": "agent",
        "step_index": 2,
        "state": "{}",
        "created_at": datetime(2026, 1, 2, tzinfo=UTC),
    }


def test_a_new_instance_is_what_the_constructor_makes(key: ApiKey) -> None:
    fields = _checkpoint_fields(key)
    ours, theirs = model_new(Checkpoint, **fields), Checkpoint(**fields)
    assert type(ours) is Checkpoint
    assert list(vars(ours)) == list(vars(theirs))  # the same attributes, set in the same order
    assert {k: v for k, v in vars(ours).items() if k != "_state"} == {
        k: v for k, v in vars(theirs).items() if k != "_state"
    }
    # Setting a related object also picks the database, as it does in the constructor.
    assert (
        (ours._state.db, ours._state.adding) == (theirs._state.db, theirs._state.adding) == ("default", True)
    )
    assert ours._state.fields_cache == theirs._state.fields_cache
    assert ours.thread is fields["thread"] and ours.workspace_id == key.workspace_id
    assert (ours.message_seq, ours.pinned, ours.framework) == (0, False, Checkpoint.Framework.CUSTOM)
    ours.save()
    assert Checkpoint.objects.get(pk=ours.pk).step_index == 2


def test_a_new_instance_takes_a_related_key_by_its_attribute(key: ApiKey) -> None:
    fields = _checkpoint_fields(key)
    thread = fields.pop("thread")
    assert isinstance(thread, Thread)
    ours = model_new(Checkpoint, **fields, thread_id=thread.pk)
    assert vars(ours)["thread_id"] == thread.pk and "thread" not in ours._state.fields_cache
    assert ours.thread == thread  # loaded on first use, as Django does


def test_a_new_instance_refuses_what_is_not_a_field(key: ApiKey) -> None:
    with pytest.raises(TypeError, match="surname"):
        model_new(Checkpoint, **_checkpoint_fields(key), surname="x")


def test_a_new_instance_goes_through_the_constructor_where_init_signals_are_received(key: ApiKey) -> None:
    with post_init_received(Checkpoint) as received:
        built = model_new(Checkpoint, **_checkpoint_fields(key))
    assert len(received) == 1 and received[0] is built


def test_a_loaded_relation_is_cached_as_assignment_caches_it(key: ApiKey) -> None:
    fields = _checkpoint_fields(key)
    saved = Checkpoint.objects.create(**fields)
    ours, theirs = Checkpoint.objects.get(pk=saved.pk), Checkpoint.objects.get(pk=saved.pk)
    thread = fields["thread"]
    assert isinstance(thread, Thread)
    relate_loaded(ours, "thread", thread)
    theirs.thread = thread
    assert {k: v for k, v in vars(ours).items() if k != "_state"} == {
        k: v for k, v in vars(theirs).items() if k != "_state"
    }
    assert vars(ours._state) == vars(theirs._state)  # the same db, adding and cache of related objects
    assert ours.thread is thread and ours.thread_id == thread.pk


def test_a_relation_whose_key_names_another_row_is_refused(key: ApiKey) -> None:
    saved = Checkpoint.objects.create(**_checkpoint_fields(key))
    other = Thread.objects.create(workspace=key.workspace, thread_id="other")
    with pytest.raises(ValueError):
        relate_loaded(saved, "thread", other)
    with pytest.raises(TypeError):
        relate_loaded(saved, "checkpoint_id", other)
