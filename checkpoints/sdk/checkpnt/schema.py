"""checkpnt's `Checkpoint`, `CheckpointBuilder` and `Framework`, on Cairn's record and checksum."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from checkpoints.ids import new_id
from checkpoints.integrity import CanonicalEncodingError, parse_timestamp, record_checksum
from checkpoints.sdk.checkpnt.errors import AdapterError, SchemaMigrationError
from checkpoints.sdk.jsonvalue import NotJSONError, to_json
from checkpoints.sdk.models import Checkpoint as CairnCheckpoint

CURRENT_SCHEMA_VERSION = "1.0"


def check_handoff_schema(schema: str | None) -> None:
    """Cairn hands state over at the schema version it was saved with: no migration on handoff."""
    if schema not in (None, CURRENT_SCHEMA_VERSION):
        raise SchemaMigrationError(f"no migration to schema {schema!r}: Cairn keeps the saved version")


class Framework(enum.StrEnum):
    LANGGRAPH = "langgraph"
    CREWAI = "crewai"
    AUTOGEN = "autogen"
    CUSTOM = "custom"


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint under checkpnt's field names (`session_id` is the Cairn thread). Immutable."""

    checkpoint_id: str
    agent_id: str
    session_id: str
    parent_id: str | None
    framework: Framework
    schema_version: str
    step_index: int
    step_name: str | None
    execution_state: Any
    agent_context: dict[str, Any] | None
    checksum: str
    created_at: datetime
    expires_at: datetime | None = None
    handoff_target: str | None = None
    handoff_from: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    namespace: str = ""
    run_id: str | None = None
    expired_at: datetime | None = None
    verified: bool = False

    @property
    def ttl_seconds(self) -> int | None:
        """Seconds the checkpoint had to live when it was saved (None: no expiry)."""
        if self.expires_at is None:
            return None
        return max(0, round((self.expires_at - self.created_at).total_seconds()))

    @property
    def handoff_schema(self) -> str | None:
        """The schema version a handed-off checkpoint carries (its own `schema_version`)."""
        return self.schema_version if self.handoff_target is not None else None

    def is_expired(self) -> bool:
        """True once `expires_at` has passed (or the checkpoint is a tombstone)."""
        if self.expired_at is not None:
            return True
        return self.expires_at is not None and self.expires_at <= datetime.now(UTC)

    def record(self) -> dict[str, Any]:
        """The immutable record Cairn's checksum covers (checkpoints.integrity)."""
        return {
            "thread_id": self.session_id,
            "namespace": self.namespace,
            "checkpoint_id": self.checkpoint_id,
            "parent_id": self.parent_id,
            "agent_id": self.agent_id,
            "framework": str(self.framework),
            "schema_version": self.schema_version,
            "step_index": self.step_index,
            "step_name": self.step_name,
            "run_id": self.run_id,
            "state": self.execution_state,
            "context": self.agent_context,
            "metadata": self.metadata,
            "handoff_target": self.handoff_target,
            "handoff_from": self.handoff_from,
            "created_at": self.created_at,
        }

    def verify_integrity(self) -> bool:
        """Re-hash the whole record (ids, parent, step, metadata, state, context, times): True if it matches
        `checksum`. A checkpoint read without its state (a tombstone) cannot match."""
        try:
            return record_checksum(self.record()) == self.checksum
        except CanonicalEncodingError:
            return False

    def as_dict(self) -> dict[str, Any]:
        """checkpnt's dict form (JSON-ready), with Cairn's extra fields."""
        return {
            **{key: value for key, value in self.record().items() if key not in ("thread_id", "state")},
            "session_id": self.session_id,
            "framework": self.framework.value,
            "execution_state": self.execution_state,
            "agent_context": self.agent_context,
            "created_at": self.created_at.isoformat(),
            "ttl_seconds": self.ttl_seconds,
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
            "checksum": self.checksum,
            "handoff_schema": self.handoff_schema,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        """The inverse of `as_dict` (`expires_at`, else `ttl_seconds`, gives the expiry)."""
        created_at = parse_timestamp(data["created_at"])
        expires_at: datetime | None = None
        if data.get("expires_at") is not None:
            expires_at = parse_timestamp(data["expires_at"])
        elif data.get("ttl_seconds") is not None:
            expires_at = created_at + timedelta(seconds=int(data["ttl_seconds"]))
        return cls(
            checkpoint_id=data["checkpoint_id"],
            agent_id=data["agent_id"],
            session_id=data["session_id"],
            parent_id=data.get("parent_id"),
            framework=Framework(data["framework"]),
            schema_version=data.get("schema_version", CURRENT_SCHEMA_VERSION),
            step_index=data["step_index"],
            step_name=data.get("step_name"),
            execution_state=data["execution_state"],
            agent_context=data.get("agent_context"),
            checksum=data["checksum"],
            created_at=created_at,
            expires_at=expires_at,
            handoff_target=data.get("handoff_target"),
            handoff_from=data.get("handoff_from"),
            metadata=dict(data.get("metadata") or {}),
            namespace=data.get("namespace", ""),
            run_id=data.get("run_id"),
        )

    @classmethod
    def from_cairn(cls, checkpoint: CairnCheckpoint) -> Checkpoint:
        return cls(
            checkpoint_id=checkpoint.checkpoint_id,
            agent_id=checkpoint.agent_id,
            session_id=checkpoint.thread_id,
            parent_id=checkpoint.parent_id,
            framework=Framework(checkpoint.framework),
            schema_version=checkpoint.schema_version,
            step_index=checkpoint.step_index,
            step_name=checkpoint.step_name,
            execution_state=checkpoint.state,
            agent_context=checkpoint.context,
            checksum=checkpoint.checksum,
            created_at=checkpoint.created_at,
            expires_at=checkpoint.expires_at,
            handoff_target=checkpoint.handoff_target,
            handoff_from=checkpoint.handoff_from,
            metadata=dict(checkpoint.metadata or {}),
            namespace=checkpoint.namespace,
            run_id=checkpoint.run_id,
            expired_at=checkpoint.expired_at,
            verified=checkpoint.verified,
        )


class CheckpointBuilder:
    """checkpnt's fluent builder. `build()` gives a checksummed `Checkpoint` with a new id; save it with
    `await client._backend.save(checkpoint)` (Cairn stores it under that id, as the session's next child
    unless `parent()` names one)."""

    def __init__(self, agent_id: str, framework: Framework | str) -> None:
        self._agent_id = agent_id
        self._framework = Framework(framework)
        self._session_id = new_id()
        self._parent_id: str | None = None
        self._step_index = 0
        self._step_name: str | None = None
        self._execution_state: Any = {}
        self._agent_context: dict[str, Any] = {}
        self._metadata: dict[str, Any] = {}
        self._ttl_seconds: int | None = None
        self._handoff_target: str | None = None

    def session(self, session_id: str) -> CheckpointBuilder:
        self._session_id = session_id
        return self

    def parent(self, parent_id: str) -> CheckpointBuilder:
        self._parent_id = parent_id
        return self

    def step(self, index: int, name: str | None = None) -> CheckpointBuilder:
        self._step_index, self._step_name = index, name
        return self

    def execution_state(self, state: Any) -> CheckpointBuilder:
        self._execution_state = state
        return self

    def context(self, context: dict[str, Any]) -> CheckpointBuilder:
        self._agent_context = context
        return self

    def tag(self, **kwargs: Any) -> CheckpointBuilder:
        self._metadata.update(kwargs)
        return self

    def ttl(self, seconds: int) -> CheckpointBuilder:
        self._ttl_seconds = seconds
        return self

    def handoff(self, target_agent_id: str, schema: str | None = None) -> CheckpointBuilder:
        """Mark the checkpoint for `target_agent_id`. `schema` must be None or the current version: Cairn
        hands state over at the version it was saved with."""
        check_handoff_schema(schema)
        self._handoff_target = target_agent_id
        return self

    def build(self) -> Checkpoint:
        """A Checkpoint whose values went through Cairn's one JSON normalisation (datetimes become ISO
        strings, int keys strings), so the checksum computed here is the one a restore verifies."""
        try:
            state, context, metadata = (
                to_json(self._execution_state),
                to_json(self._agent_context),
                to_json(self._metadata),
            )
        except NotJSONError as exc:
            raise AdapterError(f"the checkpoint holds a value Cairn cannot store as JSON: {exc}") from exc
        created_at = datetime.now(UTC)
        draft = Checkpoint(
            checkpoint_id=new_id(),
            agent_id=self._agent_id,
            session_id=self._session_id,
            parent_id=self._parent_id,
            framework=self._framework,
            schema_version=CURRENT_SCHEMA_VERSION,
            step_index=self._step_index,
            step_name=self._step_name,
            execution_state=state,
            agent_context=context,
            checksum="",
            created_at=created_at,
            expires_at=None
            if self._ttl_seconds is None
            else created_at + timedelta(seconds=self._ttl_seconds),
            handoff_target=self._handoff_target,
            metadata=metadata,
        )
        return Checkpoint(**{**draft.__dict__, "checksum": record_checksum(draft.record())})
