"""Strict JSON: the body limit, UTF-8, the depth limit, no duplicate keys, no NaN/Infinity."""

from __future__ import annotations

import json
import math
import re
from typing import IO, Any

from django.conf import settings
from rest_framework.parsers import BaseParser

from checkpoints.exceptions import PayloadTooLarge, ValidationFailed

# Both patterns run on text whose escaped backslashes (and, for strings, escaped quotes) were replaced by a
# NUL, which cannot occur raw in valid JSON. That keeps every scan linear: a string is then simply `"[^"]*"`.
_STRING_LITERAL = re.compile(r'"[^"]*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_HIGH = r"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE_SURROGATE = re.compile(rf"{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW}")
_CONTAINERS = (dict, list)


def _without_escaped_backslashes(text: str) -> str:
    return text.replace("\\\\", "\x00")


def json_depth_exceeds(text: str, limit: int) -> bool:
    """True if the JSON text nests deeper than `limit`. Strings are stripped first (brackets inside them do
    not count); the remaining bracket walk stops as soon as the limit is passed. Linear in the text."""
    unescaped = _without_escaped_backslashes(text).replace('\\"', "\x00")
    brackets = _NOT_BRACKET.sub("", _STRING_LITERAL.sub("", unescaped))
    depth = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise ValidationFailed(f"Duplicate key {duplicate!r} in a JSON object.")
    return result


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValidationFailed(f"Number {text} is out of range.")
    return value


def _reject_constant(name: str) -> Any:
    raise ValidationFailed(f"{name} is not valid JSON.")


def nesting_exceeds(value: Any, limit: int) -> bool:
    """True if a decoded JSON value nests deeper than `limit` (each object or array is a level, as for
    `json_depth_exceeds`). Walks level by level, so it stops as soon as the limit is passed."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            child
            for container in level
            for child in (container.values() if isinstance(container, dict) else container)
            if isinstance(child, _CONTAINERS)
        ]
    return False


def parse_json(raw: bytes | str, *, max_depth: int | None = None) -> Any:
    """Decode a JSON document under Cairn's rules; every failure is a ValidationFailed (400).

    The depth limit is checked on the decoded value (`nesting_exceeds`), which costs a fraction of scanning
    the text. The decoder itself stops a document nested past the interpreter's recursion limit; only then
    is the text scanned (`json_depth_exceeds`), so that such a document gets the depth message too."""
    max_depth = settings.CAIRN_MAX_JSON_DEPTH if max_depth is None else max_depth
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationFailed(f"The body is not valid UTF-8 (byte {exc.start}).") from exc
    else:
        text = raw
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationFailed("The JSON text holds a lone UTF-16 surrogate.") from exc
    # `"\ud800"` decodes to a lone surrogate, which no UTF-8 text (PostgreSQL, the canonical encoding, the
    # response) can hold: refuse it here, once, for every field of every endpoint.
    if "\\u" in text and _LONE_SURROGATE.search(_without_escaped_backslashes(text)):
        raise ValidationFailed("The JSON text holds a lone UTF-16 surrogate escape (\\ud800-\\udfff).")
    try:
        value = json.loads(
            text,
            object_pairs_hook=_reject_duplicate_keys,
            parse_float=_finite_float,
            parse_constant=_reject_constant,
        )
    except json.JSONDecodeError as exc:
        raise ValidationFailed(f"Malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from exc
    except RecursionError as exc:
        if json_depth_exceeds(text, max_depth):
            raise _too_deep(max_depth) from exc
        raise ValidationFailed(f"Malformed JSON: {exc}") from exc
    except ValueError as exc:  # e.g. an integer with more digits than Python allows
        raise ValidationFailed(f"Malformed JSON: {exc}") from exc
    if nesting_exceeds(value, max_depth):
        raise _too_deep(max_depth)
    return value


def _too_deep(max_depth: int) -> ValidationFailed:
    return ValidationFailed(f"JSON nests deeper than {max_depth} levels.", {"max_depth": max_depth})


class StrictJSONParser(BaseParser):
    """The API's only parser. Bodies are JSON whatever the Content-Type says (curl -d sends a form type)."""

    media_type = "*/*"

    def parse(
        self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        if stream is None:
            return {}
        limit = settings.CAIRN_MAX_BODY_BYTES
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise PayloadTooLarge(f"The body is larger than {limit} bytes.", {"max_bytes": limit})
        if not raw.strip():
            raise ValidationFailed("The body is empty; send a JSON object.")
        return parse_json(raw)
