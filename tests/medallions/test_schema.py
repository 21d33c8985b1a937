"""medallion.v1 validation: normalised scopes, path-precise errors, round trips, the JSON Schema export."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from checkpoints.medallion_schema import (
    Evidence,
    Medallion,
    MedallionContent,
    MedallionDraft,
    MedallionPatch,
    MedallionScope,
    SchemaError,
    content_json_schema,
    medallion_json_schema,
    stable_id,
)


def content(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "summary": {
            "high_level": "Billing refactor: line items batched.",
            "subsystems": [{"name": "module:tax", "status": "in_progress", "notes": "moving"}],
        },
        "decisions": [{"id": "D-1", "statement": "Batch loading.", "rationale": "Speed.", "confidence": 0.9}],
        "open_questions": [
            {"id": "Q-1", "question": "Rounding mode?", "blocked_on": ["finance"], "priority": "high"}
        ],
        "affordances": {
            "recommended_entry_points": ["billing/tax.py"],
            "avoid_repeating": [],
            "invariants": None,
        },
    }
    data.update(overrides)
    return data


def document() -> dict[str, Any]:
    return {
        "meta": {
            "medallion_id": "0190c0de-0000-7000-8000-000000000001",
            "schema_version": "medallion.v1",
            "model": "cairn-extractive-1",
            "created_at": "2026-01-01T10:00:00.000000Z",
            "updated_at": "2026-01-02T10:00:00.000000Z",
            "version": 2,
            "status": "active",
            "knowledge_min_ts": "2025-12-31T00:00:00.000000Z",
            "knowledge_max_ts": "2026-01-01T00:00:00.000000Z",
            "source_thread_id": "run-1",
        },
        "scope": {"graph_nodes": ["repo:billing"], "tags": ["refactor"]},
        **content(),
    }


def test_it_normalises_scopes_so_equal_scopes_share_one_key() -> None:
    messy = MedallionScope(graph_nodes=[" module:cli", "repo:muse", "repo:muse", "  "], tags=["b", "a", ""])
    clean = MedallionScope.from_dict({"graph_nodes": ["repo:muse", "module:cli"], "tags": ["a", "b"]})
    assert messy.to_dict() == {"graph_nodes": ["module:cli", "repo:muse"], "tags": ["a", "b"]}
    assert messy.scope_key == clean.scope_key
    assert len(clean.scope_key) == 64
    # Moving an item from one side to the other is a different scope.
    assert MedallionScope(graph_nodes=["a"]).scope_key != MedallionScope(tags=["a"]).scope_key
    assert MedallionScope(graph_nodes=[" "], tags=[]).is_empty


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d["decisions"][0].update(confidence=1.5), "$.decisions[0].confidence"),
        (lambda d: d["decisions"][0].update(confidence=True), "$.decisions[0].confidence"),
        (lambda d: d["decisions"][0].update(confidence="0.5"), "$.decisions[0].confidence"),
        (lambda d: d["open_questions"][0].update(priority="urgent"), "$.open_questions[0].priority"),
        (lambda d: d["open_questions"][0].update(blocked_on="finance"), "$.open_questions[0].blocked_on"),
        (lambda d: d["summary"]["subsystems"][0].update(status="done"), "$.summary.subsystems[0].status"),
        (lambda d: d["summary"].update(high_level="x" * 301), "$.summary.high_level"),
        (lambda d: d["summary"].update(high_level="   "), "$.summary.high_level"),
        (lambda d: d["summary"].update(high_level="a\x00b"), "$.summary.high_level"),
        (lambda d: d["summary"].update(high_level="\ud800"), "$.summary.high_level"),
        (lambda d: d["affordances"].update(invariants="x"), "$.affordances.invariants"),
        (lambda d: d["affordances"].update(extra=1), "$.affordances.extra"),
        (lambda d: d["decisions"].append(dict(d["decisions"][0])), "$.decisions[1].id"),
        (lambda d: d.update(decisions={}), "$.decisions"),
        (lambda d: d.pop("summary"), "$.summary"),
    ],
)
def test_it_refuses_invalid_content_naming_the_json_path(mutate: Any, path: str) -> None:
    data = content()
    mutate(data)
    with pytest.raises(SchemaError) as caught:
        MedallionContent.from_dict(data)
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")


def test_it_accepts_exactly_300_characters_of_high_level() -> None:
    parsed = MedallionContent.from_dict(content(summary={"high_level": "é" * 300}))
    assert len(parsed.summary.high_level) == 300


def test_it_requires_every_field_of_model_output_but_defaults_them_for_agents() -> None:
    minimal = {
        "summary": {"high_level": "Done."},
        "decisions": [{"statement": "Use X.", "rationale": "", "confidence": 1}],
    }
    parsed = MedallionContent.from_dict(minimal)
    assert parsed.decisions[0].id == stable_id("D", "use x")
    assert parsed.affordances.invariants is None and parsed.open_questions == []
    with pytest.raises(SchemaError) as caught:
        MedallionContent.from_dict(minimal, require_all=True)
    assert caught.value.path in ("$.open_questions", "$.affordances", "$.decisions")


def test_it_round_trips_a_whole_document() -> None:
    parsed = Medallion.from_dict(document())
    assert parsed.to_dict() == document()
    assert parsed.meta.created_at == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert parsed.validate() == parsed


@pytest.mark.parametrize(
    ("meta", "path"),
    [
        ({"updated_at": "2025-12-31T00:00:00Z"}, "$.meta.updated_at"),
        ({"knowledge_max_ts": "2025-01-01T00:00:00Z"}, "$.meta.knowledge_max_ts"),
        ({"created_at": "2026-01-01T10:00:00"}, "$.meta.created_at"),
        ({"version": 0}, "$.meta.version"),
        ({"status": "archived"}, "$.meta.status"),
        ({"schema_version": "medallion.v2"}, "$.meta.schema_version"),
    ],
)
def test_it_refuses_impossible_meta(meta: dict[str, Any], path: str) -> None:
    data = document()
    data["meta"].update(meta)
    with pytest.raises(SchemaError) as caught:
        Medallion.from_dict(data)
    assert caught.value.path == path


def test_it_refuses_server_owned_meta_in_a_draft_and_in_a_patch() -> None:
    draft = {"scope": {"tags": ["t"]}, "summary": {"high_level": "x"}, "meta": {"version": 3}}
    with pytest.raises(SchemaError, match="read-only") as caught:
        MedallionDraft.from_dict(draft)
    assert caught.value.path == "$.meta.version"
    with pytest.raises(SchemaError, match="read-only"):
        MedallionPatch.from_dict({"scope": {"tags": ["other"]}})
    with pytest.raises(SchemaError, match="at least one"):
        MedallionPatch.from_dict({})
    patch = MedallionPatch.from_dict({"status": "stale", "meta": {"model": "gpt-4o"}})
    assert patch.status == "stale" and patch.meta == {"model": "gpt-4o"} and not patch.changes_content


def test_it_validates_evidence() -> None:
    parsed = Evidence.from_dict({"session_summary": "Did things", "transcripts": None, "artefacts": None})
    assert parsed.to_dict() == {"session_summary": "Did things", "transcripts": [], "artefacts": {}}
    for bad, path in [
        ({"session_summary": ""}, "$.session_summary"),
        ({"session_summary": "x", "transcripts": [1]}, "$.transcripts[0]"),
        ({"session_summary": "x", "artefacts": []}, "$.artefacts"),
        ({"session_summary": "x", "artefacts": {"a": {"b\x00": 1}}}, "$.artefacts.a.b\x00"),
        ({"session_summary": "x", "surprise": 1}, "$.surprise"),
    ]:
        with pytest.raises(SchemaError) as caught:
            Evidence.from_dict(bad)
        assert caught.value.path == path


def test_it_exports_a_strict_json_schema_that_accepts_valid_output_and_rejects_invalid() -> None:
    strict = content_json_schema()
    jsonschema.Draft202012Validator.check_schema(strict)
    validator = jsonschema.Draft202012Validator(strict)
    valid = MedallionContent.from_dict(content()).to_dict()
    assert list(validator.iter_errors(valid)) == []
    invalid = content()
    invalid["decisions"][0]["confidence"] = 2
    assert list(validator.iter_errors(invalid))

    def walk(node: Any) -> None:
        # Strict structured output: every object closes its properties and requires all of them.
        if isinstance(node, dict):
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
                assert sorted(node["required"]) == sorted(node["properties"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(strict)
    whole = jsonschema.Draft202012Validator(
        medallion_json_schema(), format_checker=jsonschema.FormatChecker()
    )
    assert list(whole.iter_errors(document())) == []


def test_it_imports_without_django() -> None:
    code = (
        "import sys; import checkpoints.medallion_schema as m; "
        "assert not [k for k in sys.modules if k.split('.')[0] in ('django', 'rest_framework')], 'django'; "
        "print(m.SCHEMA_VERSION)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "medallion.v1"
