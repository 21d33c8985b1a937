"""JSON rendering that splices stored canonical JSON in verbatim (no decode/re-encode on restore)."""

from __future__ import annotations

import re
import secrets
from typing import Any

from rest_framework.renderers import JSONRenderer


class RawJSON(str):
    """A str that already holds JSON text; the renderer inserts it as is."""

    __slots__ = ()


class CairnJSONRenderer(JSONRenderer):
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        fragments: list[str] = []
        token = secrets.token_hex(8)

        def swap(value: Any) -> Any:
            if isinstance(value, RawJSON):
                fragments.append(value)
                # The NUL makes the marker impossible in any other string we render (NUL is refused on input).
                return f"\x00{token}:{len(fragments) - 1}\x00"
            if isinstance(value, dict):
                return {key: swap(item) for key, item in value.items()}
            if isinstance(value, list):
                return [swap(item) for item in value]
            return value

        rendered = super().render(swap(data), accepted_media_type, renderer_context)
        if not fragments:
            return rendered
        marker = re.compile(rf'"\\u0000{token}:(\d+)\\u0000"'.encode())
        return marker.sub(lambda m: fragments[int(m.group(1))].encode("utf-8"), rendered)
