"""Typed result models: what the API returns, as dataclasses.

Each model keeps the full JSON it was built from in `raw`, so a field the server adds later is never lost and
the SDK keeps working against a newer server. Timestamps are aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from enum import Enum
from functools import cached_property
from typing import Any, Final, Generic, Self, TypeVar
from urllib.parse import parse_qs, urlsplit

from checkpoints.integrity import (
    CHECKSUM_FIELDS,
    PAYLOAD_FIELDS,
    CanonicalEncodingError,
    canonical_json,
    format_timestamp,
    parse_timestamp,
    record_checksum,
    record_checksum_from_parts,
)
from checkpoints.sdk.errors import ChecksumMismatch
from checkpoints.sdk.jsonvalue import NotJSONError, to_json, to_json_object
from checkpoints.sdk.transport import JSONText, Response

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


class Unset(Enum):
    UNSET = "UNSET"


UNSET: Final = Unset.UNSET
"""An argument the caller did not pass, as opposed to an explicit None (which means null in the API)."""

FRAMEWORKS = ("langgraph", "crewai", "autogen", "custom")


def wire(*, read: Callable[[Any], Any] | None = None, sent: bool = False) -> dict[str, Any]:
    """The metadata of a model's field as the API spells it: read from an answer under its own name (`read`
    converts the JSON value; a field without a default or a `read` must be in the answer), and part of a
    save's body when `sent` (checkpoints only)."""
    return {"wire": True, "read": read, "sent": sent}


def _text(value: Any) -> Any:
    """A text field the API may send as null: "" then."""
    return value or ""


def _object(value: Any) -> dict[str, Any]:
    """A JSON object field the API may send as null: {} then (a copy, never the answer's own dict)."""
    return dict(value or {})


def _items(value: Any) -> list[Any]:
    """A JSON array field the API may send as null: [] then."""
    return list(value or [])


@dataclass
class WireModel:
    """A model whose fields marked `wire` are read from an API answer by `wire_values`."""

    @classmethod
    def wire_values(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """This class's wire fields read from an API answer."""
        values: dict[str, Any] = {}
        for spec in fields(cls):
            if not spec.metadata.get("wire"):
                continue
            read = spec.metadata["read"]
            if spec.default is MISSING and read is None:
                value = data[spec.name]
            else:
                value = data.get(spec.name, None if spec.default is MISSING else spec.default)
            values[spec.name] = read(value) if read is not None else value
        return values


@dataclass
class AnswerModel(WireModel):
    """A model read from an API answer by its wire fields alone; it keeps the whole answer in `raw`."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls(**{**cls.wire_values(data), "raw": data})


@dataclass(kw_only=True)
class CheckpointRecord(WireModel):
    """The checkpoint's fields, defined once for the whole SDK: a save's body (`CheckpointDraft.body`), the
    record the checksum covers (checkpoints.integrity.CHECKSUM_FIELDS) and the parsing of every answer
    (`Checkpoint.from_dict`) are all read from these fields."""

    thread_id: str = field(metadata=wire())
    namespace: str = field(default="", metadata=wire(sent=True))
    checkpoint_id: str = field(metadata=wire(sent=True))
    parent_id: str | None = field(default=None, metadata=wire())
    agent_id: str = field(default="", metadata=wire(sent=True))
    framework: str = field(default="custom", metadata=wire(sent=True))
    schema_version: str = field(default="1.0", metadata=wire(sent=True))
    step_index: int = field(default=0, metadata=wire(sent=True))
    step_name: str | None = field(default=None, metadata=wire(sent=True))
    run_id: str | None = field(default=None, metadata=wire(sent=True))
    created_at: datetime = field(metadata=wire(read=_required_ts))
    state: Any = field(default=None, metadata=wire(sent=True))
    context: dict[str, Any] | None = field(default=None, metadata=wire(sent=True))
    metadata: dict[str, Any] | None = field(default=None, metadata=wire(sent=True))
    handoff_target: str | None = field(default=None, metadata=wire())
    handoff_from: str | None = field(default=None, metadata=wire())
    pinned: bool = field(default=False, metadata=wire(read=bool, sent=True))

    def record(self) -> dict[str, Any]:
        """The immutable record the checksum covers (checkpoints.integrity.CHECKSUM_FIELDS)."""
        return {name: getattr(self, name) for name in CHECKSUM_FIELDS}


@dataclass(kw_only=True)
class Checkpoint(CheckpointRecord):
    """A checkpoint (docs/sdk.md). `state`, `context` and `metadata` are None in lists fetched without
    `include_state`, and on tombstones (`expired_at` set). `verified` is True once the SDK re-hashed the
    record and it matched `checksum`."""

    checksum: str = field(default="", metadata=wire())
    written_by: str = field(default="", metadata=wire())
    message_seq: int = field(default=0, metadata=wire())
    size_bytes: int = field(default=0, metadata=wire())
    expires_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    expired_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    has_payload: bool = False
    verified: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls(
            **cls.wire_values(data),
            has_payload="state" in data and data.get("state") is not None,
            raw=data,
        )

    @property
    def is_tombstone(self) -> bool:
        return self.expired_at is not None

    def record(self) -> dict[str, Any]:
        """The record as the server sent it (re-hashing the parsed values could differ: a timestamp's
        precision)."""
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


@dataclass(kw_only=True)
class CheckpointDraft(CheckpointRecord):
    """A checkpoint about to be saved, with every field of the hashed record explicit, so the SDK computes
    the same checksum the server will (`checkpoints.integrity`) and sends it along."""

    ttl_seconds: int | Unset | None = field(default=UNSET, metadata=wire(sent=True))

    @classmethod
    def build(cls, *, exact_json: bool = False, **values: Any) -> Self:
        """Normalise the documents to JSON once (checkpoints.sdk.jsonvalue): the JSON hashed here is the
        JSON sent and stored. `exact_json`: the caller made them of the exact JSON built-ins already, with
        string keys and no deeper than the server allows (the LangGraph codec does), so they are used as
        they are."""
        if values.get("framework", "custom") not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}")
        if values.get("state") is None:
            raise ValueError("state is required (it may be any JSON value except null)")
        if not exact_json:
            values["state"] = to_json(values["state"], path="$.state")
            values["context"] = to_json_object(values.get("context") or {}, path="$.context")
            values["metadata"] = to_json_object(values.get("metadata") or {}, path="$.metadata")
        return cls(**values)

    def record(self) -> dict[str, Any]:
        return {**super().record(), "created_at": format_timestamp(self.created_at)}

    @cached_property  # a draft is not changed once built
    def documents(self) -> dict[str, str]:
        """The canonical JSON text of the record's documents (state, context, metadata): encoded once, then
        both hashed for the checksum and sent as they are."""
        try:
            return {name: canonical_json(getattr(self, name)) for name in PAYLOAD_FIELDS}
        except CanonicalEncodingError as exc:
            raise NotJSONError(f"the checkpoint cannot be encoded canonically: {exc}") from exc

    @cached_property
    def checksum(self) -> str:
        try:
            return record_checksum_from_parts(self.record(), self.documents)
        except CanonicalEncodingError as exc:
            raise NotJSONError(f"the checkpoint cannot be encoded canonically: {exc}") from exc

    def body(self, *, with_parent: bool) -> dict[str, Any]:
        """The save's body: every `sent` field (an UNSET one left out; the documents as their canonical
        text), the checksum and the timestamp; the parent only `with_parent` (a PUT of the head leaves it
        to the server)."""
        body = {
            spec.name: JSONText(self.documents[spec.name])
            if spec.name in PAYLOAD_FIELDS
            else getattr(self, spec.name)
            for spec in fields(self)
            if spec.metadata.get("sent") and getattr(self, spec.name) is not UNSET
        }
        body.update(checksum=self.checksum, created_at=format_timestamp(self.created_at))
        if with_parent:
            body["parent_id"] = self.parent_id
        return body

    def saved(self, response: Response) -> SaveResult:
        """The answer to a save made with include_state=false, completed with the documents sent. It proves
        the server stored exactly the record hashed here: at once when the answer names the checksum sent and
        every field of its record is the one sent (same JSON type and value), else by re-hashing it."""
        raw = dict(response.body)
        raw.update(state=self.state, context=self.context, metadata=self.metadata)
        checkpoint = Checkpoint.from_dict(raw)
        if raw.get("checksum") == self.checksum and _same_json(checkpoint.record(), self.record()):
            checkpoint.verified = True
        else:
            checkpoint.verify()
        return SaveResult(checkpoint, created=response.status == 201)


def _same_json(answer: dict[str, Any], sent: dict[str, Any]) -> bool:
    return answer.keys() == sent.keys() and all(
        answer[name] is sent[name] or (type(answer[name]) is type(sent[name]) and answer[name] == sent[name])
        for name in sent
    )


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
class Thread(AnswerModel):
    """A thread. The counts, `storage_bytes`, `head` and the idle expiry the retention jobs act on
    (`effective_expires_at`, set by the rule `expiry_source`) are filled on the detail endpoint."""

    thread_id: str = field(metadata=wire())
    user_id: str = field(default="", metadata=wire(read=_text))
    name: str = field(default="", metadata=wire(read=_text))
    tags: list[str] = field(default_factory=list, metadata=wire(read=_items))
    metadata: dict[str, Any] = field(default_factory=dict, metadata=wire(read=_object))
    scope: dict[str, Any] = field(default_factory=dict, metadata=wire(read=_object))
    ttl_seconds: int | None = field(default=None, metadata=wire())
    expires_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    pinned: bool = field(default=False, metadata=wire(read=bool))
    forked_from: dict[str, Any] | None = field(default=None, metadata=wire())
    created_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    updated_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    message_count: int | None = field(default=None, metadata=wire())
    checkpoint_count: int | None = field(default=None, metadata=wire())
    storage_bytes: int | None = field(default=None, metadata=wire())
    head: str | None = field(default=None, metadata=wire())
    effective_expires_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    expiry_source: str | None = field(default=None, metadata=wire())
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Message(AnswerModel):
    """A conversation message; `seq` is assigned by the server (gapless per thread)."""

    message_id: str = field(metadata=wire())
    role: str = field(metadata=wire())
    content: str = field(default="", metadata=wire(read=_text))
    seq: int | None = field(default=None, metadata=wire())
    thread_id: str | None = field(default=None, metadata=wire())
    content_blocks: list[Any] | None = field(default=None, metadata=wire())
    tool_calls: Any = field(default=None, metadata=wire())
    tool_call_id: str = field(default="", metadata=wire(read=_text))
    name: str = field(default="", metadata=wire(read=_text))
    usage: dict[str, Any] | None = field(default=None, metadata=wire())
    metadata: dict[str, Any] = field(default_factory=dict, metadata=wire(read=_object))
    created_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Annotation(AnswerModel):
    """A finding: a comment and an optional verdict (correct, wrong, needs_review) on a thread, or on one of
    its checkpoints (`checkpoint_id`); `author` is the API key or dashboard user that wrote it."""

    annotation_id: str = field(metadata=wire())
    thread_id: str = field(metadata=wire())
    comment: str = field(metadata=wire())
    checkpoint_id: str | None = field(default=None, metadata=wire())
    namespace: str | None = field(default=None, metadata=wire())
    verdict: str | None = field(default=None, metadata=wire())
    actor_type: str = field(default="", metadata=wire(read=_text))
    author: str = field(default="", metadata=wire(read=_text))
    created_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Diff:
    """An RFC 6902 JSON Patch from `against` (default: the parent) to `checkpoint_id`."""

    checkpoint_id: str
    against: str | None
    patch: list[dict[str, Any]]
    # The record's fields that differ ({"field", "before", "after"}: agent_id, step_index, parent, ...).
    changed_fields: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diff:
        return cls(
            checkpoint_id=data["checkpoint_id"],
            against=data.get("against"),
            patch=data["patch"],
            changed_fields=data.get("changed_fields", []),
        )


@dataclass
class Job(WireModel):
    """A background job (summaries, sweeps, ...)."""

    job_id: str
    kind: str
    status: str
    params: dict[str, Any] = field(default_factory=dict, metadata=wire(read=_object))
    result: Any = field(default=None, metadata=wire())
    error: str = field(default="", metadata=wire(read=_text))
    attempts: int = field(default=0, metadata=wire())
    created_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    started_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    finished_at: datetime | None = field(default=None, metadata=wire(read=_ts))
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        # The id may come as `id`; a job answer without its kind or status still parses (as "").
        return cls(
            job_id=str(data.get("job_id") or data.get("id")),
            kind=data.get("kind", ""),
            status=data.get("status", ""),
            **cls.wire_values(data),
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
