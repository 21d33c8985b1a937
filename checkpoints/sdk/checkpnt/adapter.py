"""checkpnt's `LangGraphAdapter`: a LangGraph `StateSnapshot` (or its dict form) to a `Checkpoint` and back,
for saving a graph's state by hand (`CheckpntSaver` is the automatic way). Needs no LangGraph import."""

from __future__ import annotations

from typing import Any

from checkpoints.ids import new_id
from checkpoints.sdk.checkpnt.errors import AdapterError
from checkpoints.sdk.checkpnt.schema import Checkpoint, CheckpointBuilder, Framework
from checkpoints.sdk.jsonvalue import NotJSONError, to_json


def _part(snapshot: Any, name: str) -> Any:
    return snapshot.get(name) if isinstance(snapshot, dict) else getattr(snapshot, name, None)


def _jsonable(value: Any) -> Any:
    """Plain JSON, or LangChain objects (messages) in LangChain's own JSON form (`langchain_core.load`)."""
    try:
        return to_json(value)
    except NotJSONError as exc:
        try:
            from langchain_core.load import dumpd
        except ImportError:
            raise exc from None
        return to_json(dumpd(value))


def _config(config: Any) -> dict[str, Any] | None:
    if config is None:
        return None
    if isinstance(config, dict):
        return {key: value for key, value in config.items() if key != "callbacks"}
    return {"configurable": dict(getattr(config, "configurable", {}) or {})}


def _thread_id(snapshot: Any) -> str | None:
    config = _config(_part(snapshot, "config")) or {}
    thread_id = (config.get("configurable") or {}).get("thread_id")
    return None if thread_id is None else str(thread_id)


class LangGraphAdapter:
    """Translates between LangGraph state snapshots and checkpnt `Checkpoint`s."""

    def extract_state(self, snapshot: Any) -> dict[str, Any]:
        """The snapshot's values, next nodes, config, metadata, thread id and parent config, as JSON."""
        try:
            return {
                "values": _jsonable(dict(_part(snapshot, "values") or {})),
                "next": [str(node) for node in _part(snapshot, "next") or ()],
                "config": _jsonable(_config(_part(snapshot, "config")) or {}),
                "metadata": _jsonable(dict(_part(snapshot, "metadata") or {})),
                "thread_id": _thread_id(snapshot),
                "parent_config": _jsonable(_config(_part(snapshot, "parent_config"))),
            }
        except (NotJSONError, TypeError, ValueError) as exc:
            raise AdapterError(
                f"Failed to extract LangGraph state: {exc}. Pass a StateSnapshot from app.get_state(config)."
            ) from exc

    def extract(
        self,
        framework_state: Any,
        agent_id: str,
        session_id: str | None = None,
        parent_id: str | None = None,
        step_index: int = 0,
        step_name: str | None = None,
        context: dict[str, Any] | None = None,
        ttl_seconds: int | None = None,
        **metadata: Any,
    ) -> Checkpoint:
        """A Checkpoint of the snapshot: the session is its thread id, the step its metadata's `step`, the
        step name `before:<next nodes>` (or the metadata's `source`)."""
        state = self.extract_state(framework_state)
        nodes = state["next"]
        builder = (
            CheckpointBuilder(agent_id=agent_id, framework=Framework.LANGGRAPH)
            .session(session_id or state["thread_id"] or new_id())
            .step(
                state["metadata"].get("step", step_index),
                name=step_name or (f"before:{','.join(nodes)}" if nodes else state["metadata"].get("source")),
            )
            .execution_state(state)
            .context(context or {})
            .tag(**metadata)
        )
        if parent_id:
            builder.parent(parent_id)
        if ttl_seconds:
            builder.ttl(ttl_seconds)
        return builder.build()

    def reconstruct(self, checkpoint: Checkpoint) -> dict[str, Any]:
        """`values`, `next`, `config` (to resume with), `metadata`, `thread_id`, `checkpoint_id`,
        `agent_context` of a LangGraph checkpoint."""
        if checkpoint.framework != Framework.LANGGRAPH:
            raise AdapterError(
                f"Cannot reconstruct LangGraph state from a {checkpoint.framework.value} checkpoint."
            )
        state = checkpoint.execution_state or {}
        return {
            "values": state.get("values", {}),
            "next": state.get("next", []),
            "config": state.get("config", {}),
            "metadata": state.get("metadata", {}),
            "thread_id": state.get("thread_id"),
            "checkpoint_id": checkpoint.checkpoint_id,
            "agent_context": checkpoint.agent_context,
        }
