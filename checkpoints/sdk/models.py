"""Typed result models: what the API returns, as dataclasses.

Each model keeps the full JSON it was built from in `raw`, so a field the server adds later is never lost and
the SDK keeps working against a newer server. Timestamps are aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qs, urlsplit

from checkpoints.integrity import CHECKSUM_FIELDS, CanonicalEncodingError, parse_timestamp, record_checksum
from checkpoints.sdk.errors import ChecksumMismatch

T = TypeVar("T")


def _ts(value: Any) -> datetime | None:
    return parse_timestamp(value) if isinstance(value, str) and value else None


def _required_ts(value: Any) -> datetime:
    parsed = _ts(value)
    if parsed is None:
        raise ValueError(f"expected a timestamp, got {value!r}")
    return parsed


@dataclass
class Page(Generic[T]):
    """One page of a list: `results`, and the `next` / `previous` links (None at the ends)."""

    results: list[T]
    next: str | None = None
    previous: str | None = None

    @property
    def next_cursor(self) -> str | None:
        """The cursor of the next page, to pass as `cursor=` to the same list method."""
        return _cursor(self.next)

    @property
    def previous_cursor(self) -> str | None:
        return _cursor(self.previous)

    def __iter__(self) -> Any:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    @classmethod
    def parse(cls, body: dict[str, Any], item: Callable[[Any], T]) -> Page[T]:
        return cls(
            results=[item(row) for row in body.get("results", [])],
            next=body.get("next"),
            previous=body.get("previous"),
        )


def _cursor(url: str | None) -> str | None:
    if not url:
        return None
    values = parse_qs(urlsplit(url).query).get("cursor")
    return values[0] if values else None


@dataclass
class Checkpoint:
    """A checkpoint (SPEC section 5). `state`, `context` and `metadata` are None in lists fetched without
    `include_state`, and on tombstones (`expired_at` set). `verified` is True once the SDK re-hashed the
    record and it matched `checksum`."""

    thread_id: str
    namespace: str
    checkpoint_id: str
    parent_id: str | None
    agent_id: str
    framework: str
    schema_version: str
    step_index: int
    step_name: str | None
    run_id: str | None
    checksum: str
    created_at: datetime
    state: Any = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    handoff_target: str | None = None
    handoff_from: str | None = None
    message_seq: int = 0
    size_bytes: int = 0
    expires_at: datetime | None = None
    pinned: bool = False
    expired_at: datetime | None = None
    has_payload: bool = False
    verified: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            thread_id=data["thread_id"],
            namespace=data.get("namespace", ""),
            checkpoint_id=data["checkpoint_id"],
            parent_id=data.get("parent_id"),
            agent_id=data.get("agent_id", ""),
            framework=data.get("framework", "custom"),
            schema_version=data.get("schema_version", "1.0"),
            step_index=data.get("step_index", 0),
            step_name=data.get("step_name"),
            run_id=data.get("run_id"),
            checksum=data.get("checksum", ""),
            created_at=_required_ts(data.get("created_at")),
            state=data.get("state"),
            context=data.get("context"),
            metadata=data.get("metadata"),
            handoff_target=data.get("handoff_target"),
            handoff_from=data.get("handoff_from"),
            message_seq=data.get("message_seq", 0),
            size_bytes=data.get("size_bytes", 0),
            expires_at=_ts(data.get("expires_at")),
            pinned=bool(data.get("pinned", False)),
            expired_at=_ts(data.get("expired_at")),
            has_payload="state" in data and data.get("state") is not None,
            raw=data,
        )

    @property
    def is_tombstone(self) -> bool:
        return self.expired_at is not None

    def record(self) -> dict[str, Any]:
        """The immutable record the checksum covers (checkpoints.integrity.CHECKSUM_FIELDS)."""
        return {name: self.raw.get(name) for name in CHECKSUM_FIELDS}

    def verify(self) -> Checkpoint:
        """Re-hash the record with `checkpoints.integrity` and compare it with `checksum`.

        Raises ChecksumMismatch on a difference; marks the checkpoint `verified` otherwise. A checkpoint
        without its payload (a list without include_state, a tombstone) cannot be verified and is returned
        unchanged.
        """
        if not self.has_payload:
            return self
        try:
            computed = record_checksum(self.record())
        except CanonicalEncodingError as exc:
            raise ChecksumMismatch(
                f"checkpoint {self.checkpoint_id!r} cannot be re-hashed: {exc}", status=0
            ) from exc
        if computed != self.checksum:
            raise ChecksumMismatch(
                f"checkpoint {self.checkpoint_id!r} does not match its checksum: it was altered after it "
                "was saved, or in transit",
                details={"checkpoint_id": self.checkpoint_id, "stored": self.checksum, "computed": computed},
                status=0,
            )
        self.verified = True
        return self


@dataclass
class PendingWrite:
    """A LangGraph pending write stored against a checkpoint id."""

    task_id: str
    channel: str
    value: Any
    idx: int
    task_path: str = ""
    type: str = ""
    created_at: datetime | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingWrite:
        return cls(
            task_id=data["task_id"],
            channel=data["channel"],
            value=data.get("value"),
            idx=data.get("idx", 0),
            task_path=data.get("task_path", ""),
            type=data.get("type", ""),
            created_at=_ts(data.get("created_at")),
        )


@dataclass
class Thread:
    """A thread. The counts, `storage_bytes` and `head` are filled on the detail endpoint."""

    thread_id: str
    user_id: str = ""
    name: str = ""
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    scope: dict[str, Any] = field(default_factory=dict)
    ttl_seconds: int | None = None
    expires_at: datetime | None = None
    pinned: bool = False
    forked_from: dict[str, Any] | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    message_count: int | None = None
    checkpoint_count: int | None = None
    storage_bytes: int | None = None
    head: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Thread:
        return cls(
            thread_id=data["thread_id"],
            user_id=data.get("user_id") or "",
            name=data.get("name") or "",
            tags=list(data.get("tags") or []),
            metadata=dict(data.get("metadata") or {}),
            scope=dict(data.get("scope") or {}),
            ttl_seconds=data.get("ttl_seconds"),
            expires_at=_ts(data.get("expires_at")),
            pinned=bool(data.get("pinned", False)),
            forked_from=data.get("forked_from"),
            created_at=_ts(data.get("created_at")),
            updated_at=_ts(data.get("updated_at")),
            message_count=data.get("message_count"),
            checkpoint_count=data.get("checkpoint_count"),
            storage_bytes=data.get("storage_bytes"),
            head=data.get("head"),
            raw=data,
        )


@dataclass
class Message:
    """A conversation message; `seq` is assigned by the server (gapless per thread)."""

    message_id: str
    role: str
    content: str = ""
    seq: int | None = None
    thread_id: str | None = None
    content_blocks: list[Any] | None = None
    tool_calls: Any = None
    tool_call_id: str = ""
    name: str = ""
    usage: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            message_id=data["message_id"],
            role=data["role"],
            content=data.get("content") or "",
            seq=data.get("seq"),
            thread_id=data.get("thread_id"),
            content_blocks=data.get("content_blocks"),
            tool_calls=data.get("tool_calls"),
            tool_call_id=data.get("tool_call_id") or "",
            name=data.get("name") or "",
            usage=data.get("usage"),
            metadata=dict(data.get("metadata") or {}),
            created_at=_ts(data.get("created_at")),
            raw=data,
        )


@dataclass
class Diff:
    """An RFC 6902 JSON Patch from `against` (default: the parent) to `checkpoint_id`."""

    checkpoint_id: str
    against: str | None
    patch: list[dict[str, Any]]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diff:
        return cls(checkpoint_id=data["checkpoint_id"], against=data.get("against"), patch=data["patch"])


@dataclass
class Job:
    """A background job (summaries, sweeps, ...)."""

    job_id: str
    kind: str
    status: str
    params: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str = ""
    attempts: int = 0
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        return cls(
            job_id=str(data.get("job_id") or data.get("id")),
            kind=data.get("kind", ""),
            status=data.get("status", ""),
            params=dict(data.get("params") or {}),
            result=data.get("result"),
            error=data.get("error") or "",
            attempts=data.get("attempts", 0),
            created_at=_ts(data.get("created_at")),
            started_at=_ts(data.get("started_at")),
            finished_at=_ts(data.get("finished_at")),
            raw=data,
        )

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed")


@dataclass
class SaveResult:
    """A saved checkpoint and whether this call created it (False: an identical retry found it stored)."""

    checkpoint: Checkpoint
    created: bool
