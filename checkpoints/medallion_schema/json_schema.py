"""JSON Schema exports: the content schema given to models for structured output, and the whole
document as the API returns it."""

from __future__ import annotations

from typing import Any

from checkpoints.medallion_schema.checks import (
    HIGH_LEVEL_MAX_CHARS,
    PRIORITIES,
    SCHEMA_VERSION,
    STATUSES,
    SUBSYSTEM_STATUSES,
)

# --- JSON Schema --------------------------------------------------------------------------------------


def _strict_object(properties: dict[str, Any], description: str = "") -> dict[str, Any]:
    # Strict structured output wants every property required and no others allowed.
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def content_json_schema() -> dict[str, Any]:
    """The content schema for models. Lengths are stated in descriptions (strict structured output
    rejects maxLength) and checked by `MedallionContent.from_dict` when the answer comes back."""
    return _strict_object(
        {
            "summary": _strict_object(
                {
                    "high_level": {
                        "type": "string",
                        "description": f"What was learned, at most {HIGH_LEVEL_MAX_CHARS} characters.",
                    },
                    "subsystems": {
                        "type": "array",
                        "items": _strict_object(
                            {
                                "name": {"type": "string"},
                                "status": {"type": "string", "enum": list(SUBSYSTEM_STATUSES)},
                                "notes": {"type": "string"},
                            }
                        ),
                    },
                }
            ),
            "decisions": {
                "type": "array",
                "items": _strict_object(
                    {
                        "id": {"type": "string", "description": "Stable id; keep existing ids unchanged."},
                        "statement": {"type": "string"},
                        "rationale": {"type": "string"},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    }
                ),
            },
            "open_questions": {
                "type": "array",
                "items": _strict_object(
                    {
                        "id": {"type": "string", "description": "Stable id; keep existing ids unchanged."},
                        "question": {"type": "string"},
                        "blocked_on": _strings("What resolving it waits for."),
                        "priority": {"type": "string", "enum": list(PRIORITIES)},
                    }
                ),
            },
            "affordances": _strict_object(
                {
                    "recommended_entry_points": _strings("Where the next session should start."),
                    "avoid_repeating": _strings("Work that was done or failed and must not be redone."),
                    "invariants": {
                        "type": ["array", "null"],
                        "items": {"type": "string"},
                        "description": "Rules that must keep holding, or null.",
                    },
                }
            ),
        },
        "A medallion.v1: what an agent learned about a scope.",
    )


def medallion_json_schema() -> dict[str, Any]:
    """JSON Schema of the whole document as the API returns it."""
    content = content_json_schema()
    timestamp = {"type": "string", "format": "date-time"}
    nullable_timestamp = {"type": ["string", "null"], "format": "date-time"}
    meta = _strict_object(
        {
            "medallion_id": {"type": "string"},
            "schema_version": {"type": "string", "const": SCHEMA_VERSION},
            "model": {"type": "string"},
            "created_at": timestamp,
            "updated_at": timestamp,
            "version": {"type": "integer", "minimum": 1},
            "status": {"type": "string", "enum": list(STATUSES)},
            "knowledge_min_ts": nullable_timestamp,
            "knowledge_max_ts": nullable_timestamp,
            "source_thread_id": {"type": ["string", "null"]},
        }
    )
    scope = _strict_object({"graph_nodes": _strings("Graph node ids."), "tags": _strings("Tags.")})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://cairn.dev/schemas/{SCHEMA_VERSION}.json",
        **_strict_object({"meta": meta, "scope": scope, **content["properties"]}, content["description"]),
    }
