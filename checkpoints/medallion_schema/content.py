"""Scope, evidence and the written content of a medallion (summary, decisions, open questions,
affordances)."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self

from checkpoints.integrity import canonical_bytes
from checkpoints.medallion_schema.checks import (
    HIGH_LEVEL_MAX_CHARS,
    ID_MAX_CHARS,
    NAME_MAX_CHARS,
    PRIORITIES,
    SCOPE_ITEM_MAX_CHARS,
    SCOPE_MAX_ITEMS,
    SESSION_SUMMARY_MAX_CHARS,
    SUBSYSTEM_STATUSES,
    TEXT_MAX_CHARS,
    TRANSCRIPTS_MAX_ITEMS,
    SchemaError,
    array,
    check_text,
    choice,
    confidence,
    fields_for,
    items_of,
    json_value,
    obj,
    stable_id,
    text,
    text_list,
    type_name,
    unique_ids,
)
from checkpoints.medallion_schema.json_schema import content_json_schema

# --- scope and evidence -------------------------------------------------------------------------------


def normalise_scope_items(items: Iterable[str]) -> list[str]:
    """Strip, drop empty, deduplicate, sort: two spellings of one scope are the same scope."""
    return sorted({item.strip() for item in items if item.strip()})


@dataclass
class MedallionScope:
    """What a medallion is about: graph node ids and tags, always normalised."""

    graph_nodes: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    DEFAULTED: ClassVar[tuple[str, ...]] = ("graph_nodes", "tags")

    def __post_init__(self) -> None:
        self.graph_nodes = normalise_scope_items(self.graph_nodes)
        self.tags = normalise_scope_items(self.tags)

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> MedallionScope:
        data = obj(data, path, required=cls.REQUIRED, optional=cls.DEFAULTED)
        lists = {}
        for name in ("graph_nodes", "tags"):
            items = array(data.get(name, []), f"{path}.{name}", max_items=SCOPE_MAX_ITEMS)
            lists[name] = [
                text(item, f"{path}.{name}[{i}]", max_chars=SCOPE_ITEM_MAX_CHARS, allow_empty=True)
                for i, item in enumerate(items)
            ]
        return cls(**lists)

    def to_dict(self) -> dict[str, list[str]]:
        return {"graph_nodes": list(self.graph_nodes), "tags": list(self.tags)}

    @property
    def is_empty(self) -> bool:
        return not self.graph_nodes and not self.tags

    @property
    def scope_key(self) -> str:
        """SHA-256 (hex) of the normalised scope: equal for exactly the scopes that are equal."""
        return hashlib.sha256(canonical_bytes(self.to_dict())).hexdigest()


@dataclass
class Evidence:
    """What a session produced: a non-empty summary, transcripts and artefacts (paths, commands, ...)."""

    session_summary: str
    transcripts: list[str] = field(default_factory=list)
    artefacts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> Evidence:
        data = obj(data, path, required=("session_summary",), optional=("transcripts", "artefacts"))
        summary = text(
            data["session_summary"], f"{path}.session_summary", max_chars=SESSION_SUMMARY_MAX_CHARS
        )
        raw_transcripts = data.get("transcripts") or []
        transcripts = array(raw_transcripts, f"{path}.transcripts", max_items=TRANSCRIPTS_MAX_ITEMS)
        for i, item in enumerate(transcripts):
            if not isinstance(item, str):
                raise SchemaError(f"{path}.transcripts[{i}]", f"expected a string, got {type_name(item)}")
            check_text(item, f"{path}.transcripts[{i}]")
        artefacts = data.get("artefacts")
        if artefacts is None:
            artefacts = {}
        if not isinstance(artefacts, dict):
            raise SchemaError(f"{path}.artefacts", f"expected an object, got {type_name(artefacts)}")
        json_value(artefacts, f"{path}.artefacts")
        return cls(session_summary=summary, transcripts=list(transcripts), artefacts=dict(artefacts))

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_summary": self.session_summary,
            "transcripts": list(self.transcripts),
            "artefacts": dict(self.artefacts),
        }


# --- content ------------------------------------------------------------------------------------------


class _Part(ABC):
    """A part of the content. `REQUIRED` and `DEFAULTED` (class keywords `required`, `defaulted`; inherited
    when not given) are the keys it reads: `from_dict` checks the object's keys, `_fields` reads them."""

    REQUIRED: ClassVar[tuple[str, ...]] = ()
    DEFAULTED: ClassVar[tuple[str, ...]] = ()

    if TYPE_CHECKING:

        def __init__(self, **fields: Any) -> None: ...

    def __init_subclass__(
        cls, required: tuple[str, ...] | None = None, defaulted: tuple[str, ...] | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if required is not None:
            cls.REQUIRED = required
        if defaulted is not None:
            cls.DEFAULTED = defaulted

    @classmethod
    def from_dict(cls, data: Any, path: str = "$", require_all: bool = False) -> Self:
        data = obj(data, path, **fields_for(require_all, cls.REQUIRED, cls.DEFAULTED))
        return cls(**cls._fields(data, path, require_all))

    @classmethod
    @abstractmethod
    def _fields(cls, data: Mapping[str, Any], path: str, require_all: bool) -> dict[str, Any]:
        """The constructor's keywords, each read from `data` and checked."""


@dataclass
class Subsystem(_Part, required=("name", "status"), defaulted=("notes",)):
    name: str
    status: str = "unknown"
    notes: str = ""

    @classmethod
    def _fields(cls, data: Mapping[str, Any], path: str, require_all: bool) -> dict[str, Any]:
        return {
            "name": text(data["name"], f"{path}.name", max_chars=NAME_MAX_CHARS),
            "status": choice(data["status"], f"{path}.status", SUBSYSTEM_STATUSES),
            "notes": text(data.get("notes", ""), f"{path}.notes", max_chars=TEXT_MAX_CHARS, allow_empty=True),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "notes": self.notes}


class _Identified(_Part):
    """A decision or open question: its main text (the `KEY` field) and an id, the one given or one derived
    from that text (`ID_PREFIX` + its hash); `_details` reads the other fields."""

    KEY: ClassVar[str]
    ID_PREFIX: ClassVar[str]

    @classmethod
    def _fields(cls, data: Mapping[str, Any], path: str, require_all: bool) -> dict[str, Any]:
        key = text(data[cls.KEY], f"{path}.{cls.KEY}", max_chars=TEXT_MAX_CHARS)
        if "id" in data:
            item_id = text(data["id"], f"{path}.id", max_chars=ID_MAX_CHARS)
        else:
            item_id = stable_id(cls.ID_PREFIX, key)
        return {"id": item_id, cls.KEY: key, **cls._details(data, path)}

    @classmethod
    @abstractmethod
    def _details(cls, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        """The fields besides the id and the `KEY` text."""


@dataclass
class Decision(_Identified, required=("statement", "rationale", "confidence"), defaulted=("id",)):
    id: str
    statement: str
    rationale: str
    confidence: float
    KEY: ClassVar[str] = "statement"
    ID_PREFIX: ClassVar[str] = "D"

    @classmethod
    def _details(cls, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        return {
            "rationale": text(
                data["rationale"], f"{path}.rationale", max_chars=TEXT_MAX_CHARS, allow_empty=True
            ),
            "confidence": confidence(data["confidence"], f"{path}.confidence"),
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class OpenQuestion(_Identified, required=("question", "priority"), defaulted=("id", "blocked_on")):
    id: str
    question: str
    priority: str = "medium"
    blocked_on: list[str] = field(default_factory=list)
    KEY: ClassVar[str] = "question"
    ID_PREFIX: ClassVar[str] = "Q"

    @classmethod
    def _details(cls, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        return {
            "priority": choice(data["priority"], f"{path}.priority", PRIORITIES),
            "blocked_on": text_list(data.get("blocked_on", []), f"{path}.blocked_on", max_items=50),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "blocked_on": list(self.blocked_on),
            "priority": self.priority,
        }


@dataclass
class Affordances(_Part, defaulted=("recommended_entry_points", "avoid_repeating", "invariants")):
    recommended_entry_points: list[str] = field(default_factory=list)
    avoid_repeating: list[str] = field(default_factory=list)
    invariants: list[str] | None = None

    @classmethod
    def _fields(cls, data: Mapping[str, Any], path: str, require_all: bool) -> dict[str, Any]:
        names = cls.DEFAULTED
        invariants = data.get("invariants")
        return {
            "recommended_entry_points": text_list(
                data.get("recommended_entry_points", []), f"{path}.{names[0]}"
            ),
            "avoid_repeating": text_list(data.get("avoid_repeating", []), f"{path}.{names[1]}"),
            "invariants": None if invariants is None else text_list(invariants, f"{path}.{names[2]}"),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "recommended_entry_points": list(self.recommended_entry_points),
            "avoid_repeating": list(self.avoid_repeating),
            "invariants": None if self.invariants is None else list(self.invariants),
        }


@dataclass
class Summary(_Part, required=("high_level",), defaulted=("subsystems",)):
    high_level: str
    subsystems: list[Subsystem] = field(default_factory=list)

    @classmethod
    def _fields(cls, data: Mapping[str, Any], path: str, require_all: bool) -> dict[str, Any]:
        return {
            "high_level": text(data["high_level"], f"{path}.high_level", max_chars=HIGH_LEVEL_MAX_CHARS),
            "subsystems": items_of(
                data.get("subsystems", []),
                f"{path}.subsystems",
                lambda item, p: Subsystem.from_dict(item, p, require_all),
            ),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"high_level": self.high_level, "subsystems": [s.to_dict() for s in self.subsystems]}


CONTENT_FIELDS = ("summary", "decisions", "open_questions", "affordances")


@dataclass
class MedallionContent:
    """The written part of a medallion: what a provider generates and an agent may edit."""

    summary: Summary
    decisions: list[Decision] = field(default_factory=list)
    open_questions: list[OpenQuestion] = field(default_factory=list)
    affordances: Affordances = field(default_factory=Affordances)

    @classmethod
    def from_dict(cls, data: Any, path: str = "$", require_all: bool = False) -> MedallionContent:
        """Validate content. `require_all=True` (model output) also refuses missing lists and fields that
        would otherwise default: an answer that omits `decisions` must not silently erase them."""
        data = obj(data, path, **fields_for(require_all, ("summary",), CONTENT_FIELDS[1:]))
        return cls._parse(data, path, require_all)

    @classmethod
    def _parse(cls, data: Mapping[str, Any], path: str, require_all: bool) -> MedallionContent:
        decisions = items_of(
            data.get("decisions", []), f"{path}.decisions", lambda d, p: Decision.from_dict(d, p, require_all)
        )
        questions = items_of(
            data.get("open_questions", []),
            f"{path}.open_questions",
            lambda q, p: OpenQuestion.from_dict(q, p, require_all),
        )
        unique_ids(decisions, f"{path}.decisions")
        unique_ids(questions, f"{path}.open_questions")
        return cls(
            summary=Summary.from_dict(data["summary"], f"{path}.summary", require_all),
            decisions=decisions,
            open_questions=questions,
            affordances=Affordances.from_dict(
                data.get("affordances", {}), f"{path}.affordances", require_all
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary.to_dict(),
            "decisions": [d.to_dict() for d in self.decisions],
            "open_questions": [q.to_dict() for q in self.open_questions],
            "affordances": self.affordances.to_dict(),
        }

    @staticmethod
    def json_schema() -> dict[str, Any]:
        """JSON Schema of the content, for structured output (`response_format: json_schema`, strict)."""
        return content_json_schema()
