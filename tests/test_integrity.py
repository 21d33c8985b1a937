"""The canonical encoding and checksum shared by the server and the SDK."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from checkpoints.integrity import (
    CHECKSUM_FIELDS,
    CanonicalEncodingError,
    canonical_json,
    format_timestamp,
    record_checksum,
    record_checksum_from_parts,
)

RECORD = {
    "thread_id": "t1",
    "namespace": "",
    "checkpoint_id": "c1",
    "parent_id": None,
    "agent_id": "agent",
    "framework": "custom",
    "schema_version": "1.0",
    "step_index": 0,
    "step_name": None,
    "run_id": None,
    "state": {"b": [1, 2.5, "é"], "a": {"z": None, "y": True}},
    "context": {},
    "metadata": {"source": "input"},
    "handoff_target": None,
    "handoff_from": None,
    "created_at": datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
}


def test_it_sorts_keys_without_whitespace_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": ["é", 1.5]}) == '{"a":["é",1.5],"b":1}'


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "\ud800", object()])
def test_it_refuses_what_json_cannot_hold(value: object) -> None:
    with pytest.raises(CanonicalEncodingError):
        canonical_json({"x": value})


def test_it_hashes_the_whole_record_as_sorted_canonical_json() -> None:
    document = dict(RECORD, created_at="2026-01-02T03:04:05.000006Z")
    expected = hashlib.sha256(
        json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    assert record_checksum(RECORD) == expected


def test_it_gives_the_same_digest_from_stored_canonical_parts() -> None:
    payloads = {name: canonical_json(RECORD[name]) for name in ("state", "context", "metadata")}
    scalars = {k: v for k, v in RECORD.items() if k not in payloads}
    assert record_checksum_from_parts(scalars, payloads) == record_checksum(RECORD)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("agent_id", 'quote " backslash \\ tab \t nul \x00 line \u2028 é 決'),
        ("step_index", -(2**63)),
        ("step_index", 2**64),
        ("step_index", True),  # not an int to JSON: written as the encoder writes it
        ("parent_id", "x" * 10_000),
    ],
)
def test_the_parts_write_each_scalar_as_the_whole_record_does(field: str, value: object) -> None:
    record = dict(RECORD, **{field: value})
    payloads = {name: canonical_json(record[name]) for name in ("state", "context", "metadata")}
    scalars = {k: v for k, v in record.items() if k not in payloads}
    assert record_checksum_from_parts(scalars, payloads) == record_checksum(record)


@pytest.mark.parametrize("field", ["agent_id", "thread_id", "step_name"])
def test_the_parts_refuse_a_lone_surrogate_in_a_scalar(field: str) -> None:
    payloads = {name: canonical_json(RECORD[name]) for name in ("state", "context", "metadata")}
    scalars = {k: v for k, v in RECORD.items() if k not in payloads}
    with pytest.raises(CanonicalEncodingError):
        record_checksum_from_parts(dict(scalars, **{field: "a\ud800b"}), payloads)
    with pytest.raises(CanonicalEncodingError):
        record_checksum(dict(RECORD, **{field: "a\ud800b"}))


@pytest.mark.parametrize("field", [f for f in CHECKSUM_FIELDS if f != "created_at"])
def test_it_changes_when_any_field_changes(field: str) -> None:
    altered: dict[str, Any] = dict(RECORD)
    altered[field] = {"tampered": True} if field in ("state", "context", "metadata") else "tampered"
    assert record_checksum(altered) != record_checksum(RECORD)


def test_it_refuses_an_incomplete_record() -> None:
    with pytest.raises(CanonicalEncodingError, match="missing"):
        record_checksum({k: v for k, v in RECORD.items() if k != "parent_id"})


def test_it_refuses_naive_timestamps() -> None:
    with pytest.raises(CanonicalEncodingError):
        record_checksum(dict(RECORD, created_at=datetime(2026, 1, 1)))  # noqa: DTZ001 - the point of the test


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "2026-01-02T03:04:05.000006Z"),
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05.000000Z"),
        (datetime(5, 6, 7, 8, 9, 10, 999999, tzinfo=UTC), "0005-06-07T08:09:10.999999Z"),
        (datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC), "0999-12-31T23:59:59.000000Z"),
        (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "9999-12-31T23:59:59.999999Z"),
        # An offset is turned into UTC, across a day and a year.
        (datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))), "2025-12-31T23:30:00.000000Z"),
        (
            datetime(2026, 3, 1, 23, 0, 0, 1, tzinfo=timezone(timedelta(hours=-5))),
            "2026-03-02T04:00:00.000001Z",
        ),
    ],
)
def test_timestamps_have_one_canonical_form(value: datetime, expected: str) -> None:
    assert format_timestamp(value) == expected
