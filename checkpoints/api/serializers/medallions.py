"""Medallion request and response shapes (docs/medallions.md).

Input is validated by `checkpoints.medallion_schema` (the same code the SDK uses), which names the JSON path
of the first problem; these are the representations and the OpenAPI declarations derived from that schema.
"""

from __future__ import annotations

import copy
from typing import Any

from checkpoints import medallion_schema as schema
from checkpoints.integrity import format_timestamp
from checkpoints.models import Medallion, MedallionRevision
from checkpoints.services.medallion_reads import medallion_document


def medallion_representation(medallion: Medallion) -> dict[str, Any]:
    """The medallion.v1 document: meta, scope, summary, decisions, open_questions, affordances."""
    return medallion_document(medallion).to_dict()


def revision_representation(revision: MedallionRevision) -> dict[str, Any]:
    """One version: who and what produced it (job, model, evidence) and the whole document at that version."""
    return {
        "version": revision.version,
        "status": revision.status,
        "model": revision.model,
        "created_at": format_timestamp(revision.created_at),
        "requested_by": revision.actor_label,
        "job_id": str(revision.job.job_id) if revision.job is not None else None,
        "evidence": revision.evidence,
        "medallion": revision.content,
    }


# --- OpenAPI declarations ----------------------------------------------------------------------------------


def openapi(json_schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema (2020-12) rewritten for OpenAPI 3.0: `type: [x, "null"]` becomes `nullable`, `const`
    becomes a one-value `enum`, `$schema`/`$id` go."""
    result: dict[str, Any] = {}
    for key, value in json_schema.items():
        if key in ("$schema", "$id"):
            continue
        if key == "type" and isinstance(value, list):
            result["type"] = next(t for t in value if t != "null")
            result["nullable"] = "null" in value
        elif key == "const":
            result["enum"] = [value]
        elif key == "properties":
            result[key] = {name: openapi(sub) for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            result[key] = openapi(value)
        else:
            result[key] = copy.deepcopy(value)
    return result


_DOCUMENT = openapi(schema.medallion_json_schema())
_CONTENT = _DOCUMENT["properties"]
_WRITABLE_META = {
    name: _CONTENT["meta"]["properties"][name]
    for name in ("schema_version", "model", "knowledge_min_ts", "knowledge_max_ts", "source_thread_id")
}


def _object(properties: dict[str, Any], required: list[str], description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:  # OpenAPI 3.0 forbids an empty `required`
        schema["required"] = required
    if description:
        schema["description"] = description
    return schema


def _as_accepted(strict: dict[str, Any], parser: Any, nested: dict[str, Any] | None = None) -> dict[str, Any]:
    """A response schema (an object, or an array of them) relaxed to what its input parser accepts: only the
    parser's `REQUIRED` fields are required, the others default. `nested` maps a property to its parser."""
    relaxed = copy.deepcopy(strict)
    target = relaxed["items"] if relaxed.get("type") == "array" else relaxed
    target.pop("required", None)
    if parser.REQUIRED:
        target["required"] = list(parser.REQUIRED)
    for name, child_parser in (nested or {}).items():
        target["properties"][name] = _as_accepted(target["properties"][name], child_parser)
    return relaxed


SCOPE_SCHEMA = _as_accepted(_CONTENT["scope"], schema.MedallionScope)
_ACCEPTED_CONTENT = {
    "summary": _as_accepted(_CONTENT["summary"], schema.Summary, {"subsystems": schema.Subsystem}),
    "decisions": _as_accepted(_CONTENT["decisions"], schema.Decision),
    "open_questions": _as_accepted(_CONTENT["open_questions"], schema.OpenQuestion),
    "affordances": _as_accepted(_CONTENT["affordances"], schema.Affordances),
}
EVIDENCE_SCHEMA = _object(
    {
        "session_summary": {"type": "string", "minLength": 1, "description": "What happened (not empty)."},
        "transcripts": {"type": "array", "items": {"type": "string"}, "nullable": True},
        "artefacts": {"type": "object", "additionalProperties": True, "nullable": True},
    },
    ["session_summary"],
    "What a session produced.",
)
MEDALLION_SCHEMA = {**_DOCUMENT, "description": "A medallion.v1 document."}
SCORED_MEDALLION_SCHEMA = {
    **_DOCUMENT,
    "description": "A medallion.v1 document with its `score`: the cosine similarity to the query (null: "
    "not embedded yet).",
    "properties": {**_DOCUMENT["properties"], "score": {"type": "number", "nullable": True}},
}
MEDALLION_CREATE_SCHEMA = _object(
    {
        "meta": _object(_WRITABLE_META, [], "Only these keys: the server sets id, version, times, status."),
        "scope": SCOPE_SCHEMA,
        **_ACCEPTED_CONTENT,
    },
    ["scope", "summary"],
    "An agent-written medallion. Decision and question ids may be omitted (stable ids are derived).",
)
MEDALLION_PATCH_SCHEMA = _object(
    {
        "status": {"type": "string", "enum": list(schema.STATUSES)},
        "meta": _object(
            {
                **{
                    k: v
                    for k, v in _WRITABLE_META.items()
                    if k in ("model", "knowledge_min_ts", "knowledge_max_ts")
                },
                "updated_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "Later than the stored one: a new version even if nothing else changes, "
                    "stamped with the server's time (an equal or earlier value changes nothing).",
                },
            },
            [],
        ),
        **_ACCEPTED_CONTENT,
    },
    [],
    "Only the keys sent change; each change is a new version.",
)
CHECKPOINT_SCHEMA = _object(
    {
        "scope": SCOPE_SCHEMA,
        "evidence": EVIDENCE_SCHEMA,
        "thread_id": {"type": "string", "nullable": True, "description": "The thread the session ran in."},
    },
    ["scope", "evidence"],
)
REVISION_SCHEMA = _object(
    {
        "version": {"type": "integer"},
        "status": {"type": "string", "enum": list(schema.STATUSES)},
        "model": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "requested_by": {"type": "string"},
        "job_id": {"type": "string", "format": "uuid", "nullable": True},
        "evidence": {**EVIDENCE_SCHEMA, "nullable": True},
        "medallion": MEDALLION_SCHEMA,
    },
    ["version", "status", "model", "created_at", "requested_by", "job_id", "evidence", "medallion"],
)


def page_schema(item: dict[str, Any]) -> dict[str, Any]:
    return _object(
        {
            "results": {"type": "array", "items": item},
            "next": {"type": "string", "format": "uri", "nullable": True},
            "previous": {"type": "string", "format": "uri", "nullable": True},
        },
        ["results", "next", "previous"],
    )
