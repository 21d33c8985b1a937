"""medallion's models under the seed's names, validated when constructed, with pydantic-style
`model_dump` / `model_dump_json` / `model_validate` / `model_validate_json`.

They are Cairn's medallion.v1 dataclasses (checkpoints.medallion_schema) with the seed's names: the rules
(confidence in [0, 1], priorities, statuses, lengths, `updated_at` >= `created_at`, unique ids) live there
once; an invalid object raises `SchemaValidationError` (a ValueError) as it is built. A naive datetime is
read as local time, as `datetime.astimezone()` does, and kept in UTC.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, Self, cast

from checkpoints import medallion_schema as schema
from checkpoints.integrity import parse_timestamp
from checkpoints.sdk.medallion.errors import SchemaValidationError

Priority = Literal["low", "medium", "high"]
SubsystemStatus = Literal["unknown", "stable", "in_progress", "deprecated"]
MedallionStatus = Literal["active", "stale", "superseded"]


def _validated(check: Any, data: Any) -> Any:
    try:
        return check(data)
    except schema.SchemaError as exc:
        raise SchemaValidationError(exc.path, exc.message) from None


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value


class _Model:
    """The pydantic-style surface, and validation of the whole object after construction."""

    _schema: ClassVar[Any]
    _parts: ClassVar[dict[str, type[_Model]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The medallion_schema dataclass the model is mixed into: `class Decision(_Model, schema.Decision)`.
        cls._schema = next(base for base in cls.__mro__ if not issubclass(base, _Model))

    def _document(self) -> dict[str, Any]:
        """The JSON form (`to_dict` of the medallion_schema dataclass this is mixed into)."""
        return cast(dict[str, Any], cast(Any, self).to_dict())

    def __post_init__(self) -> None:
        for name, part in self._parts.items():
            value = getattr(self, name)
            if isinstance(value, list):
                setattr(self, name, [part._coerce(item) for item in value])
            elif value is not None:
                setattr(self, name, part._coerce(value))
        self._prepare()
        _validated(lambda data: self._schema.from_dict(data, type(self).__name__), self._document())

    def _prepare(self) -> None:
        """Normalise fields before validation (hook)."""

    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, cls):
            return value
        return cls.model_validate(value.to_dict() if hasattr(value, "to_dict") else value)

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """Build from a dict (JSON form); SchemaValidationError names the first offending value."""
        if isinstance(data, cls):
            return data
        parsed = _validated(cls._schema.from_dict, data)
        return cls(**{field.name: getattr(parsed, field.name) for field in dataclasses.fields(parsed)})

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray) -> Self:
        try:
            data = json.loads(json_data)
        except ValueError as exc:
            raise SchemaValidationError("$", f"invalid JSON: {exc}") from None
        return cls.model_validate(data)

    def model_dump(self, *, mode: str = "python", exclude_none: bool = False) -> dict[str, Any]:
        """A dict: datetimes as datetimes (`mode="python"`) or ISO strings (`mode="json"`)."""
        data = self._document() if mode == "json" else dataclasses.asdict(self)  # type: ignore[call-overload]
        return _without_none(data) if exclude_none else data

    def model_dump_json(self, *, indent: int | None = None, exclude_none: bool = False) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=exclude_none), indent=indent)

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


@dataclasses.dataclass
class MedallionScope(_Model, schema.MedallionScope):
    def _prepare(self) -> None:
        schema.MedallionScope.__post_init__(self)


@dataclasses.dataclass
class Evidence(_Model, schema.Evidence):
    """Session evidence. Checked where it is used (the seed's LLMs refuse an empty summary), so building
    one never fails. `transcripts` and `artefacts` default to None, as the seed's do (the server reads
    None as none)."""

    transcripts: list[str] | None = None  # type: ignore[assignment]
    artefacts: dict[str, Any] | None = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        """Building evidence never fails (see above): no validation here."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_summary": self.session_summary,
            "transcripts": None if self.transcripts is None else list(self.transcripts),
            "artefacts": None if self.artefacts is None else dict(self.artefacts),
        }


@dataclasses.dataclass
class Subsystem(_Model, schema.Subsystem):
    pass


@dataclasses.dataclass
class MedallionSummary(_Model, schema.Summary):
    _parts = {"subsystems": Subsystem}


@dataclasses.dataclass
class MedallionDecision(_Model, schema.Decision):
    pass


@dataclasses.dataclass
class MedallionOpenQuestion(_Model, schema.OpenQuestion):
    pass


@dataclasses.dataclass
class MedallionAffordances(_Model, schema.Affordances):
    pass


def _aware(value: datetime | str | None) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime | str):
        raise SchemaValidationError("$", f"expected a datetime, got {type(value).__name__}")
    if isinstance(value, str):
        value = (
            parse_timestamp(value)
            if value[-1:] == "Z" or "+" in value[10:]
            else datetime.fromisoformat(value)
        )
    return value.astimezone(UTC)


@dataclasses.dataclass
class MedallionMeta(_Model, schema.MedallionMeta):
    def _prepare(self) -> None:
        for name in ("created_at", "updated_at", "knowledge_min_ts", "knowledge_max_ts"):
            setattr(self, name, _aware(getattr(self, name)))


@dataclasses.dataclass
class Medallion(_Model, schema.Medallion):
    """A whole medallion. `model_dump_json()` indents by 2, as the seed's does."""

    _parts = {
        "meta": MedallionMeta,
        "scope": MedallionScope,
        "summary": MedallionSummary,
        "decisions": MedallionDecision,
        "open_questions": MedallionOpenQuestion,
        "affordances": MedallionAffordances,
    }

    def model_dump_json(self, *, indent: int | None = 2, exclude_none: bool = False) -> str:
        return super().model_dump_json(indent=indent, exclude_none=exclude_none)


def adopt(medallion: Any) -> Medallion:
    """This module's `Medallion` for a medallion.v1 document (an API answer, or what an LLM returned)."""
    return Medallion._coerce(medallion)


# Cairn's earlier names for the parts.
Summary = MedallionSummary
Decision = MedallionDecision
OpenQuestion = MedallionOpenQuestion
Affordances = MedallionAffordances
