"""The whole medallion document (meta + scope + content) and the two write shapes: a draft an agent
stores, a patch that changes a stored one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from checkpoints.integrity import format_timestamp
from checkpoints.medallion_schema.checks import (
    ID_MAX_CHARS,
    MODEL_MAX_CHARS,
    SCHEMA_VERSION,
    STATUSES,
    SchemaError,
    choice,
    format_ts,
    items_of,
    obj,
    text,
    timestamp,
    unique_ids,
)
from checkpoints.medallion_schema.content import (
    CONTENT_FIELDS,
    Affordances,
    Decision,
    MedallionContent,
    MedallionScope,
    OpenQuestion,
    Summary,
)

# --- the whole document -------------------------------------------------------------------------------

META_READ_ONLY = ("medallion_id", "created_at", "updated_at", "version", "status")
META_WRITABLE = ("schema_version", "model", "knowledge_min_ts", "knowledge_max_ts", "source_thread_id")


def _knowledge_window(data: Mapping[str, Any], path: str) -> tuple[datetime | None, datetime | None]:
    low = timestamp(data.get("knowledge_min_ts"), f"{path}.knowledge_min_ts")
    high = timestamp(data.get("knowledge_max_ts"), f"{path}.knowledge_max_ts")
    if low is not None and high is not None and low > high:
        raise SchemaError(f"{path}.knowledge_max_ts", "must not be earlier than knowledge_min_ts")
    return low, high


def _writable_meta(data: Mapping[str, Any], path: str) -> dict[str, Any]:
    if data.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise SchemaError(f"{path}.schema_version", f"only {SCHEMA_VERSION!r} is supported")
    low, high = _knowledge_window(data, path)
    thread_id = data.get("source_thread_id")
    return {
        "model": text(data.get("model", ""), f"{path}.model", max_chars=MODEL_MAX_CHARS, allow_empty=True),
        "knowledge_min_ts": low,
        "knowledge_max_ts": high,
        "source_thread_id": None
        if thread_id is None
        else text(thread_id, f"{path}.source_thread_id", max_chars=128),
    }


@dataclass
class MedallionMeta:
    medallion_id: str
    model: str
    created_at: datetime
    updated_at: datetime
    version: int = 1
    status: str = "active"
    schema_version: str = SCHEMA_VERSION
    knowledge_min_ts: datetime | None = None
    knowledge_max_ts: datetime | None = None
    source_thread_id: str | None = None

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> MedallionMeta:
        data = obj(
            data,
            path,
            required=("medallion_id", "created_at", "updated_at"),
            optional=("version", "status", *META_WRITABLE),
        )
        created = timestamp(data["created_at"], f"{path}.created_at")
        updated = timestamp(data["updated_at"], f"{path}.updated_at")
        if created is None or updated is None:
            raise SchemaError(f"{path}.created_at", "created_at and updated_at are required timestamps")
        if updated < created:
            raise SchemaError(f"{path}.updated_at", "must not be earlier than created_at")
        version = data.get("version", 1)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise SchemaError(f"{path}.version", "expected an integer >= 1")
        return cls(
            medallion_id=text(data["medallion_id"], f"{path}.medallion_id", max_chars=ID_MAX_CHARS),
            created_at=created,
            updated_at=updated,
            version=version,
            status=choice(data.get("status", "active"), f"{path}.status", STATUSES),
            **_writable_meta(data, path),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "medallion_id": self.medallion_id,
            "schema_version": self.schema_version,
            "model": self.model,
            "created_at": format_timestamp(self.created_at),
            "updated_at": format_timestamp(self.updated_at),
            "version": self.version,
            "status": self.status,
            "knowledge_min_ts": format_ts(self.knowledge_min_ts),
            "knowledge_max_ts": format_ts(self.knowledge_max_ts),
            "source_thread_id": self.source_thread_id,
        }


@dataclass
class Medallion:
    """A whole medallion.v1 document, as the API returns it and the SDK reads it."""

    meta: MedallionMeta
    scope: MedallionScope
    summary: Summary
    decisions: list[Decision] = field(default_factory=list)
    open_questions: list[OpenQuestion] = field(default_factory=list)
    affordances: Affordances = field(default_factory=Affordances)

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> Medallion:
        data = obj(data, path, required=("meta", "scope", "summary"), optional=CONTENT_FIELDS[1:])
        content = MedallionContent._parse(data, path, require_all=False)
        return cls(
            meta=MedallionMeta.from_dict(data["meta"], f"{path}.meta"),
            scope=MedallionScope.from_dict(data["scope"], f"{path}.scope"),
            **content.__dict__,
        )

    @classmethod
    def build(cls, meta: MedallionMeta, scope: MedallionScope, content: MedallionContent) -> Medallion:
        return cls(meta=meta, scope=scope, **content.__dict__)

    @property
    def content(self) -> MedallionContent:
        return MedallionContent(self.summary, self.decisions, self.open_questions, self.affordances)

    def to_dict(self) -> dict[str, Any]:
        return {"meta": self.meta.to_dict(), "scope": self.scope.to_dict(), **self.content.to_dict()}

    def validate(self) -> Medallion:
        """Re-validate a document built in code (constructors trust their arguments)."""
        return Medallion.from_dict(self.to_dict())


@dataclass
class MedallionDraft:
    """An agent-written medallion (`POST medallions/`): scope and content; in `meta` only the writable keys
    (model, knowledge window, source_thread_id). The server assigns id, version, timestamps and status."""

    scope: MedallionScope
    content: MedallionContent
    model: str = ""
    knowledge_min_ts: datetime | None = None
    knowledge_max_ts: datetime | None = None
    source_thread_id: str | None = None

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> MedallionDraft:
        data = obj(data, path, required=("scope", "summary"), optional=("meta", *CONTENT_FIELDS[1:]))
        meta = obj(data.get("meta", {}), f"{path}.meta", optional=META_WRITABLE, read_only=META_READ_ONLY)
        return cls(
            scope=MedallionScope.from_dict(data["scope"], f"{path}.scope"),
            content=MedallionContent._parse(data, path, require_all=False),
            **_writable_meta(meta, f"{path}.meta"),
        )


@dataclass
class MedallionPatch:
    """A change (`PATCH medallions/{id}/`): a new status and/or content parts and/or meta writable keys.
    Only the keys sent change; `content_parts` holds the raw validated parts by name."""

    status: str | None = None
    summary: Summary | None = None
    decisions: list[Decision] | None = None
    open_questions: list[OpenQuestion] | None = None
    affordances: Affordances | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # The writer moved `meta.updated_at` (medallion's store writes the meta it is given): a time later than
    # the stored one records a new version even if nothing else changes, at the server's time.
    updated_at: datetime | None = None

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> MedallionPatch:
        data = obj(data, path, optional=("status", "meta", *CONTENT_FIELDS), read_only=("scope",))
        if not data:
            raise SchemaError(path, "send at least one of status, meta, " + ", ".join(CONTENT_FIELDS))
        patch = cls()
        if "status" in data:
            patch.status = choice(data["status"], f"{path}.status", STATUSES)
        if "summary" in data:
            patch.summary = Summary.from_dict(data["summary"], f"{path}.summary")
        if "decisions" in data:
            patch.decisions = items_of(data["decisions"], f"{path}.decisions", Decision.from_dict)
            unique_ids(patch.decisions, f"{path}.decisions")
        if "open_questions" in data:
            patch.open_questions = items_of(
                data["open_questions"], f"{path}.open_questions", OpenQuestion.from_dict
            )
            unique_ids(patch.open_questions, f"{path}.open_questions")
        if "affordances" in data:
            patch.affordances = Affordances.from_dict(data["affordances"], f"{path}.affordances")
        if "meta" in data:
            meta_path = f"{path}.meta"
            writable = ("model", "knowledge_min_ts", "knowledge_max_ts", "updated_at")
            read_only = (*(key for key in META_READ_ONLY if key != "updated_at"), "source_thread_id")
            meta = dict(obj(data["meta"], meta_path, optional=writable, read_only=read_only))
            if "updated_at" in meta:
                patch.updated_at = timestamp(meta.pop("updated_at"), f"{meta_path}.updated_at")
            values = _writable_meta(meta, meta_path)
            patch.meta = {key: values[key] for key in meta}
        return patch

    @property
    def changes_content(self) -> bool:
        return any(getattr(self, name) is not None for name in CONTENT_FIELDS)
