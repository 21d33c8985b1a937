"""JSON rendering that splices stored canonical JSON in verbatim (no decode/re-encode on restore)."""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Iterable
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer

# A spliced fragment's placeholder once rendered: `"\u0000<token>:<n>\u0000"`. Compiled once, not per
# response: the token is checked in the replacement instead (compiling a fresh pattern per render cost more
# than the substitution itself on small responses).
_MARKER = re.compile(rb'"\\u0000([0-9a-f]{16}):(\d+)\\u0000"')


class RawJSON(str):
    """A str that already holds JSON text; the renderer inserts it as is."""

    __slots__ = ()


def _swap(value: Any, fragments: list[str], token: str) -> Any:
    """`value` with each RawJSON inside replaced by its placeholder, the fragment appended to `fragments`.
    (A module function, not a closure: a recursive closure refers to itself, and the cycle would keep the
    fragments alive until the collector's next pass.)"""
    if isinstance(value, RawJSON):
        fragments.append(value)
        # The NUL makes the marker impossible in any other string we render (NUL is refused on input).
        return f"\x00{token}:{len(fragments) - 1}\x00"
    if isinstance(value, dict):
        return {key: _swap(item, fragments, token) for key, item in value.items()}
    if isinstance(value, list):
        return [_swap(item, fragments, token) for item in value]
    return value


class CairnJSONRenderer(JSONRenderer):
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        if isinstance(data, RawJSON):  # a whole body already written (`json_object`)
            return data.encode("utf-8")
        fragments: list[str] = []
        token = secrets.token_hex(8)
        rendered = super().render(_swap(data, fragments, token), accepted_media_type, renderer_context)
        if not fragments:
            return rendered
        expected = token.encode("ascii")

        def splice(match: re.Match[bytes]) -> bytes:
            if match.group(1) != expected:
                return match.group(0)
            return fragments[int(match.group(2))].encode("utf-8")

        return _MARKER.sub(splice, rendered)


_encode_string = encode_basestring_ascii if CairnJSONRenderer.ensure_ascii else encode_basestring


def json_scalar(value: str | int | bool | None) -> str:
    """A string, integer, boolean or null written as CairnJSONRenderer writes it (DRF's JSON settings, and
    U+2028 and U+2029 escaped as DRF escapes them)."""
    if isinstance(value, str):
        return _encode_string(value).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    raise TypeError(f"not a JSON scalar: {type(value).__name__}")


@functools.lru_cache(maxsize=256)
def _member_name(name: str) -> str:
    return json_scalar(name) + ":"


def json_object(members: Iterable[tuple[str, str]]) -> RawJSON:
    """A JSON object written from its members' names and JSON texts, in order; rendered as it is. For the
    hottest bodies (a checkpoint): building the text directly skips a dict, the encoder and the splice."""
    return RawJSON("{" + ",".join(_member_name(name) + text for name, text in members) + "}")


def json_array(items: Iterable[str]) -> RawJSON:
    """A JSON array written from its items' JSON texts, in order."""
    return RawJSON("[" + ",".join(items) + "]")


_CONTENT_TYPE = f"{CairnJSONRenderer.media_type}; charset={CairnJSONRenderer.charset}"


def written_response(body: RawJSON, status: int = 200, headers: dict[str, str] | None = None) -> HttpResponse:
    """A body already written whole (`json_object`, `json_array`) as the response DRF's `Response` gives it
    through CairnJSONRenderer (the same bytes and Content-Type), without its rendering pass: the hot
    answers (a checkpoint saved or restored, a task's writes) skip it (docs/performance.md)."""
    return HttpResponse(body.encode("utf-8"), status=status, headers=headers, content_type=_CONTENT_TYPE)
