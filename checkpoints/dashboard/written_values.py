"""Values LangGraph's serializer wrote, made readable on the server without building any object.

The saver stores what JSON cannot hold as a placeholder `{"__cairn_type__": "<module.Type>", "serde":
"msgpack", "data": "<base64>"}` (checkpoints.sdk.langgraph.values). Restoring it with the serializer would
import and construct the named classes; here the msgpack is only unpacked: each extension (LangGraph's
"construct this class with these arguments") becomes `{"type": "<module.Type>", "value": <its arguments>}`,
and any other serde (pickle above all) is named, never loaded. See docs/dashboard.md, "What ran".
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import ormsgpack

TYPE_KEY = "__cairn_type__"
# The ext payload LangGraph packs is (module, class name, arguments[, method]).
_EXT_FIELDS = 3
MAX_DEPTH = 32


def _ext_hook(code: int, data: bytes) -> Any:
    unpacked = ormsgpack.unpackb(data, ext_hook=_ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)
    if isinstance(unpacked, list | tuple) and len(unpacked) >= _EXT_FIELDS:
        module, name, arguments = unpacked[0], unpacked[1], unpacked[2]
        return {"type": f"{module}.{name}", "value": arguments}
    return {"type": f"msgpack extension {code}", "value": unpacked}


def unpack_placeholder(value: dict[str, Any]) -> Any:
    """The readable content of one stored placeholder (a description of it if it cannot be read safely)."""
    serde, data = value.get("serde"), value.get("data")
    if not isinstance(data, str):
        return value
    try:
        raw = base64.b64decode(data, validate=True)
        if serde == "msgpack":
            return ormsgpack.unpackb(raw, ext_hook=_ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)
        if serde == "json":
            return json.loads(raw)
    except (binascii.Error, ormsgpack.MsgpackDecodeError, ValueError, TypeError, RecursionError):
        return f"({value.get(TYPE_KEY)}: unreadable {serde} value)"
    return f"({value.get(TYPE_KEY)}: {serde} value of {len(raw)} bytes, not decoded)"


def readable(value: Any, _depth: int = 0) -> Any:
    """`value` (a stored pending write or channel value) with every placeholder unpacked."""
    if _depth > MAX_DEPTH:
        return value
    if isinstance(value, list):
        return [readable(item, _depth + 1) for item in value]
    if isinstance(value, dict):
        if TYPE_KEY in value and "data" in value:
            return readable(unpack_placeholder(value), _depth + 1)
        return {key: readable(item, _depth + 1) for key, item in value.items()}
    return value


def message_text(value: Any, limit: int = 500) -> str:
    """A short human text for an error or an interrupt value: strings as they are, the rest as JSON."""
    shown = readable(value)
    if isinstance(shown, list) and len(shown) == 1:
        shown = shown[0]
    if isinstance(shown, dict) and set(shown) == {"type", "value"}:
        inner = shown["value"]
        inner = inner.get("value", inner) if isinstance(inner, dict) else inner
        shown = f"{shown['type'].rpartition('.')[2]}: {_text(inner)}"
    text = _text(shown)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
