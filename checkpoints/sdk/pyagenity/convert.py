"""Between PyAgenity's objects and Cairn's: messages (content blocks, tool calls, usage), thread info and
states. PyAgenity is optional: without it, messages stay Cairn `Message`s and states stay plain data."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from checkpoints.sdk.endpoints import threads as th_calls
from checkpoints.sdk.jsonvalue import to_json, to_json_object
from checkpoints.sdk.models import Message, Thread

try:  # PyAgenity 0.3 needs Python 3.12+: `pip install 'cairn[pyagenity]'`.
    from pyagenity.checkpointer import BaseCheckpointer
    from pyagenity.state import AgentState
    from pyagenity.state import Message as PyAgenityMessage
    from pyagenity.utils.thread_info import ThreadInfo as PyAgenityThreadInfo

    PYAGENITY_INSTALLED = True
except ImportError:  # pragma: no cover - exercised in the Python 3.12 job (tests/sdk/test_seed_pyagenity.py)
    BaseCheckpointer = None
    AgentState = PyAgenityMessage = PyAgenityThreadInfo = None
    PYAGENITY_INSTALLED = False

# PyAgenity's field names that Cairn spells differently, and the fields Cairn keeps in message metadata.
RENAMED = {"tools_calls": "tool_calls", "usages": "usage"}
IN_METADATA = ("reasoning",)


@dataclass
class FallbackThreadInfo:
    """PyAgenity's `ThreadInfo` fields, for when PyAgenity is not installed."""

    thread_id: str
    thread_name: str | None = None
    user_id: str | None = None
    metadata: dict[str, Any] | None = None
    updated_at: datetime | None = None
    run_id: str | None = None


ThreadInfo: Any = PyAgenityThreadInfo if PYAGENITY_INSTALLED else FallbackThreadInfo

# The thread metadata key holding the ThreadInfo as it was put, returned as it was (PyAgenity's
# InMemoryCheckpointer keeps the object itself).
THREAD_INFO_KEY = "pyagenity_thread_info"
# The checkpoint metadata key saying how a state was saved: "data" (a plain dict, list...) comes back as it
# was stored, "model" (a pydantic model) is rebuilt as the state class.
STATE_KIND_KEY = "pyagenity_state"


def thread_metadata(info: Any) -> dict[str, Any]:
    """What Cairn's thread keeps of a `ThreadInfo`: its metadata and `run_id` (for the API and the dashboard),
    and the whole ThreadInfo as it was put."""
    dump = getattr(info, "model_dump", None)
    data = dump(mode="json") if callable(dump) else dataclasses.asdict(info)
    metadata = dict(info.metadata or {})
    if info.run_id is not None:
        metadata["run_id"] = info.run_id
    metadata[THREAD_INFO_KEY] = data
    return to_json_object(metadata, path="$.metadata")


def thread_info(thread: Thread) -> Any:
    """A Cairn thread as a `ThreadInfo`: the one last put, as it was; else (a thread made by a state or a
    message save) built from the thread, as PyAgenity's PgCheckpointer does, `run_id` from its metadata."""
    stored = thread.metadata.get(THREAD_INFO_KEY)
    if isinstance(stored, dict):
        if PYAGENITY_INSTALLED:
            return ThreadInfo.model_validate(stored)
        known = {f.name for f in dataclasses.fields(FallbackThreadInfo)}
        values = {key: value for key, value in stored.items() if key in known}
        if values.get("updated_at") is not None:
            values["updated_at"] = datetime.fromisoformat(values["updated_at"])
        return FallbackThreadInfo(**values)
    metadata = dict(thread.metadata)
    return ThreadInfo(
        thread_id=thread.thread_id,
        thread_name=thread.name or None,
        user_id=thread.user_id,
        metadata=metadata,
        updated_at=thread.updated_at,
        run_id=metadata.get("run_id"),
    )


def message_body(message: Any, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """A PyAgenity message (its pydantic `Message`, a mapping, or an object with role/content) as Cairn's:
    content blocks kept whole with their text as the searchable content, `tools_calls` as `tool_calls`."""
    if isinstance(message, Mapping):
        data = dict(message)
    elif callable(getattr(message, "model_dump", None)):
        data = message.model_dump(mode="json")
    else:
        data = {name: getattr(message, name) for name in th_calls.MESSAGE_FIELDS if hasattr(message, name)}
    for theirs, ours in RENAMED.items():
        if theirs in data:
            data[ours] = data.pop(theirs)
    extra = {name: data.pop(name) for name in IN_METADATA if data.get(name) is not None}
    data = {key: value for key, value in data.items() if key in th_calls.MESSAGE_FIELDS and value is not None}
    if "message_id" in data:
        data["message_id"] = str(data["message_id"])
    content = data.get("content", "")
    if not isinstance(content, str):
        blocks = to_json(content, path="$.content")
        data["content_blocks"] = blocks if isinstance(blocks, list) else [blocks]
        data["content"] = " ".join(
            b["text"]
            for b in data["content_blocks"]
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    merged = {**(metadata or {}), **extra, **(data.get("metadata") or {})}
    if merged:
        data["metadata"] = to_json_object(merged, path="$.metadata")
    return th_calls.message_body(data)


def to_pyagenity_message(message: Message) -> Any:
    """A stored message as PyAgenity's `Message` when PyAgenity is installed (Cairn's otherwise)."""
    if not PYAGENITY_INSTALLED:
        return message
    metadata = dict(message.metadata)
    blocks = message.content_blocks or [{"type": "text", "text": message.content, "annotations": []}]
    created = message.created_at or datetime.now(UTC)
    return PyAgenityMessage.model_validate(
        {
            "message_id": message.message_id,
            "role": message.role,
            "content": blocks,
            "tools_calls": message.tool_calls or None,
            "reasoning": metadata.pop("reasoning", None),
            "timestamp": created.timestamp(),
            "metadata": metadata,
            "usages": message.usage or None,
        }
    )


def state_data(state: Any) -> tuple[Any, str]:
    """What is stored of a state, and its kind: a pydantic model's JSON form ("model"), anything else as it
    is ("data")."""
    dump = getattr(state, "model_dump", None)
    return (dump(mode="json"), "model") if callable(dump) else (state, "data")


def state_value(data: Any, kind: Any, state_class: Any) -> Any:
    """A stored state rebuilt as `state_class` (a pydantic model, or a class taking the fields). Without a
    class named, a model comes back as PyAgenity's `AgentState` and plain data as it was stored (never an
    empty AgentState: that lost every key). States saved before the kind was recorded count as models."""
    if state_class is None:
        state_class = AgentState if kind != "data" else None
    if state_class is None or data is None:
        return data
    validate = getattr(state_class, "model_validate", None)
    return validate(data) if callable(validate) else state_class(**data)
