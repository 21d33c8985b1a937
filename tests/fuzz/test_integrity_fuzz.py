"""Property-based fuzzing of `checkpoints.integrity`: the canonical encoding is a faithful, stable spelling of
any JSON value; the server's spliced checksum equals the client's; every field is covered; the parser and the
database store exactly what is hashed."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkpoints.api.parsers import parse_json
from checkpoints.integrity import (
    CHECKSUM_FIELDS,
    PAYLOAD_FIELDS,
    CanonicalEncodingError,
    canonical_json,
    format_timestamp,
    record_checksum,
    record_checksum_from_parts,
)
from checkpoints.models import Checkpoint, Workspace
from checkpoints.services.checkpoint_reads import checkpoint_verify
from checkpoints.services.checkpoints import checkpoint_save
from tests.conftest import ApiClient
from tests.fuzz.strategies import depth, json_objects, json_values, records

DB = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def shuffled(value: Any, rng: random.Random) -> Any:
    """The same value with every object's keys inserted in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [shuffled(item, rng) for item in value]
    return value


@given(json_values)
def test_the_canonical_text_decodes_to_the_same_value_and_is_a_fixed_point(value: Any) -> None:
    text = canonical_json(value)
    assert json.loads(text) == value
    assert canonical_json(json.loads(text)) == text
    text.encode("utf-8")  # always valid UTF-8


@given(json_values, st.randoms(use_true_random=False))
def test_key_order_and_spelling_never_change_the_canonical_text(value: Any, rng: random.Random) -> None:
    text = canonical_json(value)
    assert canonical_json(shuffled(value, rng)) == text
    # Any other spelling of the same document (ASCII escapes, whitespace) parses back to the same text.
    for spelling in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=2)):
        assert canonical_json(json.loads(spelling)) == text


@given(st.text(st.characters(categories=["Cs"]), min_size=1, max_size=4), json_values)
def test_lone_surrogates_are_refused_wherever_they_are(surrogates: str, value: Any) -> None:
    for document in ({"k": surrogates}, {surrogates: value}, [value, surrogates]):
        with pytest.raises(CanonicalEncodingError):
            canonical_json(document)


@given(st.sampled_from([float("nan"), float("inf"), float("-inf")]), json_values)
def test_non_finite_numbers_are_refused(number: float, value: Any) -> None:
    with pytest.raises(CanonicalEncodingError):
        canonical_json({"value": value, "n": [number]})


@given(records())
def test_the_spliced_checksum_equals_the_whole_record_checksum(record: dict[str, Any]) -> None:
    scalars = {field: record[field] for field in CHECKSUM_FIELDS if field not in PAYLOAD_FIELDS}
    payloads = {field: canonical_json(record[field]) for field in PAYLOAD_FIELDS}
    checksum = record_checksum(record)
    assert record_checksum_from_parts(scalars, payloads) == checksum
    # The timestamp may be spelled in any offset, as a datetime or a string: one instant, one checksum.
    spelled = {**record, "created_at": record["created_at"].isoformat()}
    assert record_checksum(spelled) == checksum
    assert record_checksum({**record, "created_at": format_timestamp(record["created_at"])}) == checksum


@given(records(), st.sampled_from(CHECKSUM_FIELDS), st.data())
def test_changing_any_field_changes_the_checksum(
    record: dict[str, Any], field: str, data: st.DataObject
) -> None:
    other = data.draw(records())[field]
    changed = {**record, field: other}
    if field == "created_at":
        same = format_timestamp(record[field]) == format_timestamp(other)
    else:
        same = canonical_json({"v": record[field]}) == canonical_json({"v": other})
    assert (record_checksum(changed) == record_checksum(record)) is same


@given(json_values)
def test_the_api_parser_reads_back_every_canonical_text(value: Any) -> None:
    text = canonical_json(value)
    if depth(value) <= 128:
        assert parse_json(text.encode("utf-8")) == value
        assert canonical_json(parse_json(text)) == text


@pytest.mark.django_db
@DB
@given(
    json_values.filter(lambda v: v is not None),  # a null state is refused (400): there is nothing to restore
    json_objects,
    json_objects.filter(lambda m: "\\u0000" not in canonical_json(m)),  # metadata is also jsonb: no NUL
)
def test_the_database_stores_and_verifies_exactly_what_was_hashed(
    workspace: Workspace, state: Any, context: dict[str, Any], metadata: dict[str, Any]
) -> None:
    saved = checkpoint_save(
        workspace=workspace, thread_id=f"fz-{uuid.uuid4().hex[:12]}", agent_id="fuzz", state=state,
        context=context, metadata=metadata,
    ).checkpoint  # fmt: skip
    row = Checkpoint.objects.select_related("thread").get(pk=saved.pk)
    assert (row.state, row.context, row.metadata) == tuple(
        canonical_json(v) for v in (state, context, metadata)
    )
    assert checkpoint_verify(row)
    record = {
        "thread_id": row.thread.thread_id, "namespace": row.namespace, "checkpoint_id": row.checkpoint_id,
        "parent_id": row.parent_checkpoint_id, "agent_id": row.agent_id, "framework": row.framework,
        "schema_version": row.schema_version, "step_index": row.step_index, "step_name": row.step_name,
        "run_id": row.run_id, "state": state, "context": context, "metadata": metadata,
        "handoff_target": row.handoff_target, "handoff_from": row.handoff_from, "created_at": row.created_at,
    }  # fmt: skip
    assert record_checksum(record) == row.checksum


@pytest.mark.django_db
@DB
@given(json_values.filter(lambda v: v is not None and depth(v) < 120))
def test_a_client_checksum_survives_the_api_round_trip(api: ApiClient, state: Any) -> None:
    """The client hashes what it sends (its own JSON spelling); the server re-parses, stores, re-hashes and
    serves it back; the client re-hashes what it receives: all three checksums are one."""
    thread_id = f"api-{uuid.uuid4().hex[:12]}"
    body = json.dumps({"agent_id": "fuzz", "state": state, "checkpoint_id": "c", "parent_id": None,
                       "step_index": 0, "created_at": "2026-01-02T03:04:05.000006+02:00"})  # fmt: skip
    saved = api.post(f"/api/v1/threads/{thread_id}/checkpoints/", body, content_type="application/json")
    assert saved.status_code == 201, saved.content
    expected = record_checksum({**saved.json(), "state": state})
    assert saved.json()["checksum"] == expected
    restored = api.get(f"/api/v1/threads/{thread_id}/checkpoints/c/")
    assert restored.status_code == 200 and restored["X-Checksum-Verified"] == "true"
    assert restored.json()["state"] == state
    assert record_checksum(restored.json()) == expected
