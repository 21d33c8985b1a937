"""How LangGraph values are stored in Cairn: readable where possible, and restored exactly as the saver's
serializer restores them (what every LangGraph saver gives back).

Channel values, pending writes and metadata are stored as JSON so the dashboard (and anyone reading the API)
sees them:

- a value that *is* JSON (dict with string keys, list, str, int, finite float, bool, None — the exact built-in
  types, so nothing is lost) is stored as itself; containers are walked, so a dict holding one odd value
  stays a readable dict with one placeholder inside;
- a LangChain message is stored as `{"__cairn_type__": "message", "role", "content", "lc": {...}}`: role and
  content for people, the message's other fields for an exact restore (checked at encode time: if the JSON
  form does not rebuild an equal message, the bytes form below is used, still with role and content);
- anything else becomes a typed, sized placeholder `{"__cairn_type__": "<module.Type>", "size": n,
  "serde": "msgpack", "data": "<base64>"}` holding the saver's serializer output (`serde.dumps_typed`), which
  restores it exactly.

A user dict that happens to contain the key `__cairn_type__` is stored as a placeholder too, so decoding is
never ambiguous.
"""

from __future__ import annotations

import base64
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict
from langgraph.checkpoint.serde.base import SerializerProtocol

TYPE_KEY = "__cairn_type__"
MESSAGE = "message"
# The server refuses JSON nested deeper than 128 levels; stop well before and store the rest as bytes.
MAX_DEPTH = 96
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def _valid_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: not storable as UTF-8 JSON
        return False
    return True


def is_plain_json(value: Any, *, allow_nul: bool = True, _depth: int = 0) -> bool:
    """True if `value` is made only of the exact JSON built-ins (so json.loads(json.dumps(v)) == v, types
    included)."""
    if _depth > MAX_DEPTH:
        return False
    kind = type(value)
    if value is None or kind is bool or kind is int:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is str:
        return _valid_text(value) and (allow_nul or "\x00" not in value)
    if kind is list:
        return all(is_plain_json(item, allow_nul=allow_nul, _depth=_depth + 1) for item in value)
    if kind is dict:
        return all(
            type(key) is str
            and _valid_text(key)
            and (allow_nul or "\x00" not in key)
            and is_plain_json(item, allow_nul=allow_nul, _depth=_depth + 1)
            for key, item in value.items()
        )
    return False


class MessageForms:
    """The stored forms of the messages a saver encoded recently. A graph carries the same message objects
    from step to step, and checking that a message's JSON form rebuilds it exactly costs more than the rest of
    its encoding; a remembered form is used again only for the very same object, only where it still fits
    within MAX_DEPTH, and only while that object still equals the message the form rebuilds (so a message
    changed in place is encoded again).
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        # id(message) -> the entry; holding the message keeps its id from being reused while the entry lives.
        self._entries: OrderedDict[int, _Form] = OrderedDict()
        self._lock = threading.Lock()

    def recall(self, message: BaseMessage, depth: int) -> dict[str, Any] | None:
        with self._lock:
            form = self._entries.get(id(message))
        if form is None or form.message is not message or depth + form.height > MAX_DEPTH:
            return None
        return form.stored if _rebuilds(form.rebuilt, message) else None

    def remember(self, message: BaseMessage, rebuilt: BaseMessage, stored: dict[str, Any]) -> None:
        form = _Form(message, _height(stored), rebuilt, stored)
        with self._lock:
            self._entries[id(message)] = form
            self._entries.move_to_end(id(message))
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)


@dataclass(frozen=True)
class _Form:
    message: BaseMessage
    height: int  # levels from the stored form down to its deepest value
    rebuilt: BaseMessage  # what the stored form rebuilds
    stored: dict[str, Any]


def _height(value: Any) -> int:
    if type(value) is dict:
        return 1 + max(map(_height, value.values()), default=0)
    if type(value) is list:
        return 1 + max(map(_height, value), default=0)
    return 0


def _rebuilds(rebuilt: BaseMessage | None, message: BaseMessage) -> bool:
    return type(rebuilt) is type(message) and rebuilt == message


class ValueCodec:
    """Encodes values to storable JSON and back, with the saver's serializer for what JSON cannot hold.

    `allow_nul=False` (for metadata, which the server also indexes as jsonb) stores strings containing NUL
    as placeholders instead of refusing them. `forms` remembers messages' stored forms across calls; only a
    codec that allows NUL uses it (the rule its forms were checked under).
    """

    def __init__(
        self, serde: SerializerProtocol, *, allow_nul: bool = True, forms: MessageForms | None = None
    ) -> None:
        self.serde = serde
        self.allow_nul = allow_nul
        self.forms = forms if allow_nul else None

    def encode(self, value: Any, _depth: int = 0) -> Any:
        kind = type(value)
        if value is None or kind is bool or kind is int:
            return value
        if kind is float and math.isfinite(value):
            return value
        if kind is str and _valid_text(value) and (self.allow_nul or "\x00" not in value):
            return value
        if _depth < MAX_DEPTH:
            if kind is list:
                return [self.encode(item, _depth + 1) for item in value]
            if kind is dict and TYPE_KEY not in value and all(self._plain_key(key) for key in value):
                return {key: self.encode(item, _depth + 1) for key, item in value.items()}
            if isinstance(value, BaseMessage):
                return self._message(value, _depth)
        return self._placeholder(value)

    def _plain_key(self, key: Any) -> bool:
        return type(key) is str and _valid_text(key) and (self.allow_nul or "\x00" not in key)

    def _placeholder(self, value: Any, **preview: Any) -> dict[str, Any]:
        kind, data = self.serde.dumps_typed(value)
        return {
            TYPE_KEY: preview.pop("type_name", f"{type(value).__module__}.{type(value).__qualname__}"),
            **preview,
            "size": len(data),
            "serde": kind,
            "data": base64.b64encode(data).decode("ascii"),
        }

    def _message(self, message: BaseMessage, depth: int) -> dict[str, Any]:
        """The message's stored form, to sit at `depth`: its content one level below, its other fields (in
        "lc") two, all within MAX_DEPTH."""
        if self.forms is not None and (remembered := self.forms.recall(message, depth)) is not None:
            return remembered
        role = _ROLES.get(message.type, getattr(message, "role", message.type))
        content = message.content
        fields = message.model_dump(exclude_defaults=True, exclude={"content", "type"})
        plain_content = is_plain_json(content, allow_nul=self.allow_nul, _depth=depth + 1)
        if plain_content and is_plain_json(fields, allow_nul=self.allow_nul, _depth=depth + 1):
            stored = {
                TYPE_KEY: MESSAGE,
                "role": role,
                "content": content,
                "lc": {"type": message.type, **fields},
            }
            try:
                rebuilt = self._rebuild_message(stored)
            except (ValueError, TypeError):
                rebuilt = None
            if rebuilt is not None and _rebuilds(rebuilt, message):
                if self.forms is not None:
                    self.forms.remember(message, rebuilt, stored)
                return stored
        preview = content if plain_content else repr(content)[:2000]
        return self._placeholder(message, type_name=MESSAGE, role=role, content=preview)

    @staticmethod
    def _rebuild_message(stored: dict[str, Any]) -> BaseMessage:
        fields = dict(stored["lc"])
        kind = fields.pop("type")
        return messages_from_dict([{"type": kind, "data": {**fields, "content": stored["content"]}}])[0]

    def decode(self, value: Any) -> Any:
        if type(value) is list:
            return [self.decode(item) for item in value]
        if type(value) is dict:
            if TYPE_KEY not in value:
                return {key: self.decode(item) for key, item in value.items()}
            if "data" in value:
                return self.serde.loads_typed((value["serde"], base64.b64decode(value["data"])))
            if value[TYPE_KEY] == MESSAGE and "lc" in value:
                return self._rebuild_message(value)
            raise ValueError(f"unreadable stored value of type {value[TYPE_KEY]!r}")
        return value
