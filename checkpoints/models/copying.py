"""Model instances built, copied or loaded for the hot path, without the work of building one
(docs/performance.md)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, NamedTuple, TypeVar

from django.db import models
from django.db.models.base import ModelState
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init

M = TypeVar("M", bound=models.Model)


def model_copy(instance: M, *related: str) -> M:
    """What `copy.copy(instance)` gives — the same field values, its own state and cache of related objects
    — without the pickling protocol it goes through for a model (a tenth of the time). Each name in
    `related` (a loaded forward relation, e.g. "workspace") is copied too, so that changing it does not
    touch the original's."""
    clone = object.__new__(type(instance))
    fields = instance.__dict__.copy()
    state = object.__new__(ModelState)
    state.__dict__.update(instance._state.__dict__)
    state.fields_cache = cache = dict(instance._state.fields_cache)
    for name in related:
        cache[name] = model_copy(cache[name])
    fields["_state"] = state
    clone.__dict__.update(fields)
    return clone


def model_part(instance: M, attnames: Iterable[str]) -> M:
    """A loaded instance of the same model holding only these fields, the others deferred: what
    `Model.from_db` makes of them, without constructing a model field by field."""
    part = object.__new__(type(instance))
    state = object.__new__(ModelState)
    state.db, state.adding = instance._state.db, False
    part.__dict__.update({name: getattr(instance, name) for name in attnames}, _state=state)
    return part


def model_from_row(model: type[M], alias: str, attnames: Sequence[str], values: Sequence[Any]) -> M:
    """What `model.from_db(alias, attnames, values)` makes of a whole row (every concrete field, in the
    model's order), without `Model.__init__`: it sets the fields one by one and sends `pre_init` and
    `post_init` for each instance. Where either signal has a receiver for the model, it is `from_db`."""
    if pre_init.has_listeners(model) or post_init.has_listeners(model):
        return model.from_db(alias, attnames, values)
    state = ModelState()
    state.db, state.adding = alias, False
    instance = object.__new__(model)
    instance.__dict__["_state"] = state  # first, as Model.__init__ sets it
    instance.__dict__.update(zip(attnames, values, strict=True))
    return instance


def relate_loaded(instance: models.Model, name: str, related: models.Model) -> None:
    """What `instance.<name> = related` does for a forward relation whose key on `instance` already holds
    `related`'s primary key (a row joined on that key): `related` cached on the instance. The descriptor's
    assignment also checks the type, asks the database routers and sets the key again. A key naming
    another row is a ValueError."""
    field = instance._meta.get_field(name)
    if not isinstance(field, models.ForeignKey):
        raise TypeError(f"{type(instance).__name__}.{name} is not a forward relation")
    if getattr(instance, field.attname) != related.pk:
        raise ValueError(f"{type(instance).__name__}.{field.attname} does not name this {name}")
    field.set_cached_value(instance, related)


class _Built(NamedTuple):
    """How `model_new` sets one concrete field: by `name` when a related object is given under it, else its
    attribute, straight into the instance where the class's attribute is Django's plain `DeferredAttribute`
    (it has no setter), through `setattr` otherwise."""

    name: str | None
    attname: str
    direct: bool
    field: models.Field[Any, Any]


@cache
def _building(model: type[models.Model]) -> tuple[_Built, ...]:
    return tuple(
        _Built(
            field.name if field.is_relation else None,
            field.attname,
            type(inspect.getattr_static(model, field.attname)) is DeferredAttribute,
            field,
        )
        for field in model._meta.concrete_fields
        if not field.generated
    )


def model_new(model: type[M], /, **values: Any) -> M:
    """What `model(**values)` makes of keyword arguments naming fields (a related object by the relation's
    name, or its key by the attribute): an unsaved instance, every field not given at its default. Without
    `Model.__init__`'s general path (positional arguments, properties) and its `pre_init` and `post_init`;
    where either signal has a receiver for the model, it is `model(**values)`."""
    if pre_init.has_listeners(model) or post_init.has_listeners(model):
        return model(**values)
    instance = object.__new__(model)
    attributes = instance.__dict__
    attributes["_state"] = ModelState()  # first, as Model.__init__ sets it
    for name, attname, direct, field in _building(model):
        if name is not None and name in values:
            setattr(instance, name, values.pop(name))  # the relation's descriptor caches the object
            continue
        value = values.pop(attname) if attname in values else field.get_default()
        if direct:
            attributes[attname] = value
        else:
            setattr(instance, attname, value)
    if values:
        raise TypeError(f"{model.__qualname__}() got unexpected keyword arguments: {', '.join(values)}")
    return instance
