"""Write bodies validated by a check compiled from their serializer (docs/performance.md).

DRF validates a body field by field through its generic machinery (empty values, the field's conversion,
its validators, the serializer's error collection); served, that cost 0.2 ms of a 2 KB save (8.5%, measured
in turns: docs/architecture.md, "The rent of each part"). `compiled(SerializerClass)` reads the serializer's
fields once and builds a plain function with the same checks for the field classes Cairn's write
serializers use. It answers only for bodies DRF accepts, with exactly DRF's validated data; for anything
else it answers None and the caller runs the serializer, so every error (and its envelope) is still DRF's
own. The serializer stays the one definition: a field class, validator or hook the compiler does not know
makes the whole serializer uncompiled (always DRF). `tests/api/test_compiled_validation.py` checks the two
agree on generated bodies.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from django.core.validators import (
    MaxLengthValidator,
    MaxValueValidator,
    MinLengthValidator,
    MinValueValidator,
    ProhibitNullCharactersValidator,
    RegexValidator,
)
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from checkpoints.api import fields as cairn
from checkpoints.api.serializers.checkpoints import CHECKSUM_FORM, ChecksumField, StrictChoiceField
from checkpoints.integrity import parse_timestamp

Check = Callable[[Any], Any]  # the validated value, or raises _Refer


class _Refer(Exception):
    """The value is not one this check accepts: DRF decides (and words the error)."""


class _NotCompilable(Exception):
    """The serializer uses something this module does not know: it is always validated by DRF."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def _refer() -> Any:
    raise _Refer  # a new one each time: a shared instance would keep every raise's frames in its traceback


def _validators(field: Any, known: tuple[type, ...]) -> list[Any]:
    if any(type(validator) not in known for validator in field.validators):
        raise _NotCompilable(f"{field.field_name}: a validator of another kind")
    return list(field.validators)


def _string(field: Any) -> Check:
    """StrictCharField and its subclasses: a string, no NUL or lone surrogate, within the lengths."""
    validators = _validators(
        field,
        (
            MaxLengthValidator,
            MinLengthValidator,
            ProhibitNullCharactersValidator,
            ProhibitSurrogateCharactersValidator,
            RegexValidator,
        ),
    )
    regexes: list[Any] = []
    for validator in validators:
        if isinstance(validator, RegexValidator):
            if validator.inverse_match:
                raise _NotCompilable(f"{field.field_name}: an inverse regex")
            regexes.append(validator.regex)  # compiled by Django
    shortest = max(field.min_length or 0, 1)
    longest = field.max_length
    allow_blank, strip, hex64 = (
        field.allow_blank,
        isinstance(field, cairn.NameField),
        type(field) is ChecksumField,
    )

    def check(value: Any) -> Any:
        if type(value) is not str:
            _refer()
        if value == "" and allow_blank:
            return value  # DRF returns a blank string before its validators
        if (
            len(value) < shortest
            or (longest is not None and len(value) > longest)
            or "\x00" in value
            or (not value.isascii() and _SURROGATE.search(value))
            or (strip and value != value.strip())
            or (hex64 and not CHECKSUM_FORM.match(value))
            or any(not regex.search(value) for regex in regexes)
        ):
            _refer()
        return value

    return check


def _integer(field: Any) -> Check:
    _validators(field, (MaxValueValidator, MinValueValidator))
    low, high = field.min_value, field.max_value

    def check(value: Any) -> Any:
        if type(value) is not int or (low is not None and value < low) or (high is not None and value > high):
            _refer()
        return value

    return check


def _boolean(value: Any) -> Any:
    return value if type(value) is bool else _refer()


def _any(value: Any) -> Any:
    return value


def _object(value: Any) -> Any:
    return value if type(value) is dict else _refer()


def _timestamp(value: Any) -> Any:
    if type(value) is not str:
        _refer()
    try:
        return parse_timestamp(value)
    except ValueError:
        return _refer()


def _choice(field: Any) -> Check:
    _validators(field, ())
    choices = dict(field.choice_strings_to_values)

    def check(value: Any) -> Any:
        if type(value) is not str or value not in choices:
            _refer()
        return choices[value]

    return check


def _nested_list(field: Any) -> Check:
    child_class: Any = type(field.child)
    child = _compile(child_class)
    allow_empty, longest, shortest = field.allow_empty, field.max_length, field.min_length

    def check(value: Any) -> Any:
        if (
            type(value) is not list
            or (not allow_empty and not value)
            or (longest is not None and len(value) > longest)
            or (shortest is not None and len(value) < shortest)
        ):
            _refer()
        return [child(item) for item in value]

    return check


_STRINGS = (cairn.StrictCharField, cairn.ClientIdField, cairn.NameField, ChecksumField)
_INTEGERS = (cairn.StrictIntegerField, cairn.TtlSecondsField)
_PLAIN: dict[type, Check] = {
    cairn.StrictBooleanField: _boolean,
    cairn.AnyJSONField: _any,
    cairn.JSONObjectField: _object,
    cairn.TimestampField: _timestamp,
}


def _field_check(field: Any) -> Check:
    kind: Any = type(field)
    if field.default is not empty or field.source != field.field_name:
        raise _NotCompilable(f"{field.field_name}: a default or another source")
    if kind in _STRINGS:
        if field.trim_whitespace:
            raise _NotCompilable(f"{field.field_name}: trims whitespace")
        return _string(field)
    if kind in _INTEGERS:
        return _integer(field)
    if kind is StrictChoiceField:
        return _choice(field)
    if kind is serializers.ListSerializer:
        if field.validators or type(field).validate is not serializers.ListSerializer.validate:
            raise _NotCompilable(f"{field.field_name}: list validators")
        return _nested_list(field)
    if isinstance(field, cairn.StrictSerializer):
        return _compile(kind)
    if kind in _PLAIN:
        _validators(field, ())
        return _PLAIN[kind]
    raise _NotCompilable(f"{field.field_name}: {kind.__name__}")


@functools.cache
def _compile(serializer_class: Any) -> Check:
    if not issubclass(serializer_class, cairn.StrictSerializer):
        raise _NotCompilable(serializer_class.__name__)
    prototype = serializer_class()
    if type(prototype).validate is not serializers.Serializer.validate or prototype.get_validators():
        raise _NotCompilable(f"{serializer_class.__name__}: validate() or validators of its own")
    plan = []
    for name, field in prototype.fields.items():
        if field.read_only:
            continue
        hook = getattr(prototype, f"validate_{name}", None)
        plan.append((name, _field_check(field), field.required, field.allow_null, hook))
    known = frozenset(name for name, *_ in plan)

    def check(data: Any) -> Any:
        if type(data) is not dict or not known.issuperset(data):
            _refer()  # not an object, or an unknown or read-only key
        result = {}
        for name, field_check, required, allow_null, hook in plan:
            value = data.get(name, empty)
            if value is empty:
                if required:
                    _refer()
                continue
            if value is None:
                if not allow_null:
                    _refer()
            else:
                value = field_check(value)
            if hook is not None:
                try:
                    value = hook(value)
                except Exception:  # the hook's own error, or a hook that needs the serializer's data
                    _refer()
            result[name] = value
        return result

    return check


Validated = Callable[[Any], dict[str, Any] | None]
_compiled: dict[type, Validated] = {}


def compiled(serializer_class: type) -> Validated:
    """The compiled check of `serializer_class`: DRF's validated data for a body DRF accepts, else None
    (then run the serializer). Only the hot bodies ask for one (`compiled_validation = True` on the
    serializer); any other serializer, or one that cannot be compiled, always answers None. Built once per
    class (two threads may both build it; either result is the same)."""
    validated = _compiled.get(serializer_class)
    if validated is None:
        validated = _compiled[serializer_class] = _build(serializer_class)
    return validated


def _build(serializer_class: type) -> Validated:
    if not getattr(serializer_class, "compiled_validation", False):
        return lambda data: None
    try:
        check = _compile(serializer_class)
    except _NotCompilable:
        return lambda data: None

    def validated(data: Any) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = check(data)
        except _Refer:
            return None
        return result

    return validated
