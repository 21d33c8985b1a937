"""Response shapes declared once: an `OutputSerializer`'s fields are both what drf-spectacular documents and
what the views render, so the document and the responses cannot drift apart.

Rendering skips DRF's per-field machinery (bound fields, `get_attribute`, `to_representation` per value),
which makes a list page two to three times slower. Each declared field becomes one expression of a dict
literal compiled once per class (`_compile`), its value:

- a static `value_<name>(obj, context)` method of the serializer, when it defines one (computed values);
- else the attribute named by the field's `source` (default: the field's name), formatted by the field's
  type: timestamps in the canonical form (`integrity.format_timestamp`), UUIDs as strings, a nullable string
  as null when empty, a nested `OutputSerializer` through its own renderers (`source="*"` passes the object
  itself); anything else (numbers, JSON documents, lists) as stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, NamedTuple

from rest_framework import serializers

from checkpoints.integrity import format_timestamp


def _timestamp(value: datetime | None) -> str | None:
    return format_timestamp(value) if value is not None else None


def _converter(field: serializers.Field) -> Callable[[Any], Any] | None:
    """How a stored value of this field's type is rendered; None: as stored (a nullable string is rendered
    `value or None`, written inline)."""
    if isinstance(field, OutputSerializer):
        return type(field).render
    if isinstance(field, serializers.DateTimeField):
        return _timestamp if field.allow_null else format_timestamp
    if isinstance(field, serializers.UUIDField):
        return str
    return None


class _Renderers(NamedTuple):
    one: Callable[[Any, dict[str, Any]], dict[str, Any]]
    many: Callable[[Iterable[Any], dict[str, Any]], list[dict[str, Any]]]


def _compile(serializer_class: type[OutputSerializer]) -> _Renderers:
    """The class's fields as one dict literal, e.g. `{"name": obj.name, "created_at": f1(obj.created_at),
    "head": f2(obj, context)}`, compiled once into a function for one object and a list comprehension for
    many: as fast as hand-written code (a loop over the fields would cost a fifth more on a list page)."""
    helpers: dict[str, Any] = {}
    items = []
    for index, (name, field) in enumerate(serializer_class().get_fields().items()):
        source = field.source or name
        method = getattr(serializer_class, f"value_{name}", None)
        if method is not None:
            helpers[f"f{index}"] = method
            expression = f"f{index}(obj, context)"
        else:
            if source != "*" and not source.isidentifier():
                raise ValueError(f"{serializer_class.__name__}.{name}: source must be an attribute name")
            expression = "obj" if source == "*" else f"obj.{source}"
            converter = _converter(field)
            if converter is not None:
                helpers[f"f{index}"] = converter
                expression = f"f{index}({expression})"
            elif isinstance(field, serializers.CharField) and field.allow_null:
                expression = f"({expression} or None)"
        items.append(f"{name!r}: {expression}")
    shape = "{" + ", ".join(items) + "}"
    # Built only from the declared field names and the attribute names checked above, never from input.
    one = eval(f"lambda obj, context: {shape}", helpers)  # nosec B307 # trusted: declared fields only
    many = eval(f"lambda objs, context: [{shape} for obj in objs]", helpers)  # nosec B307 # trusted: declared fields only
    return _Renderers(one, many)


class OutputSerializer(serializers.Serializer):
    """Base of every rendered response shape (read-only: never validates input)."""

    @classmethod
    def renderers(cls) -> _Renderers:
        renderers = cls.__dict__.get("_renderers")
        if renderers is None:
            renderers = _compile(cls)
            cls._renderers = renderers  # type: ignore[attr-defined]
        return renderers

    @classmethod
    def render(cls, obj: Any, context: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The shape of one object (None stays None: a nullable nested object)."""
        return None if obj is None else cls.renderers().one(obj, context or {})

    @classmethod
    def render_many(
        cls, objects: Iterable[Any], context: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        return cls.renderers().many(objects, context or {})

    def to_representation(self, instance: Any) -> Any:
        return type(self).render(instance, dict(self.context))
