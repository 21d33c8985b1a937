"""Integrity end to end: tampering with any stored field is caught, values round-trip with a stable
checksum, and client-computed checksums are verified before anything is stored."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from checkpoints.integrity import format_timestamp, record_checksum
from checkpoints.models import Checkpoint, Thread
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

URL = "/api/v1/threads/t1/checkpoints/"

# Every stored column of the hashed record, with a forged value for a direct UPDATE.
TAMPERED: dict[str, Any] = {
    "state": '{"n":2}',
    "context": '{"forged":true}',
    "metadata": '{"forged":true}',
    "step_index": 99,
    "parent_checkpoint_id": "c-forged",
    "agent_id": "mallory",
    "framework": "crewai",
    "schema_version": "9.9",
    "step_name": "forged",
    "run_id": "forged",
    "namespace": "forged",
    "handoff_target": "mallory",
    "handoff_from": "mallory",
    "created_at": datetime(2020, 1, 1, tzinfo=UTC),
    "checkpoint_id": "c-forged-id",
}


def _save_pair(api: ApiClient) -> dict[str, Any]:
    """A parent and a child with every optional field set, so each one has something to tamper with."""
    api.post(URL, {"checkpoint_id": "c-parent", "agent_id": "a", "state": {"n": 0}})
    body = {
        "checkpoint_id": "c-child",
        "agent_id": "a",
        "state": {"n": 1},
        "context": {"c": 1},
        "metadata": {"m": 1},
        "step_name": "plan",
        "run_id": "run-1",
        "schema_version": "2.0",
        "framework": "langgraph",
    }
    response = api.post(URL, body)
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.mark.parametrize("field", sorted(TAMPERED))
def test_it_catches_tampering_with_any_stored_field_on_restore(api: ApiClient, field: str) -> None:
    saved = _save_pair(api)
    row = Checkpoint.objects.filter(checkpoint_id="c-child")
    assert row.update(**{field: TAMPERED[field]}) == 1
    checkpoint_id = TAMPERED[field] if field == "checkpoint_id" else "c-child"

    response = api.get(f"{URL}{checkpoint_id}/")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "checksum_mismatch"
    assert error["details"]["checkpoint_id"] == checkpoint_id
    assert error["details"]["stored"] == saved["checksum"]
    assert error["details"]["computed"] != saved["checksum"]
    assert "X-Checksum-Verified" not in response


def test_it_catches_a_renamed_thread_on_restore(api: ApiClient) -> None:
    _save_pair(api)
    Thread.objects.filter(thread_id="t1").update(thread_id="t2")
    response = api.get("/api/v1/threads/t2/checkpoints/c-child/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "checksum_mismatch"


@pytest.mark.parametrize("field", ["state", "metadata", "agent_id", "created_at"])
def test_it_refuses_tampered_rows_everywhere_payloads_are_served(api: ApiClient, field: str) -> None:
    _save_pair(api)
    Checkpoint.objects.filter(checkpoint_id="c-child").update(**{field: TAMPERED[field]})
    for url in (
        "/api/v1/threads/t1/state/",
        f"{URL}?include_state=true",
        "/api/v1/checkpoints/?include_state=true",
        "/api/v1/checkpoints/c-child/",
        f"{URL}c-child/diff/",
    ):
        response = api.get(url)
        assert response.status_code == 409, url
        assert response.json()["error"]["code"] == "checksum_mismatch", url
        assert response.json()["error"]["details"]["checkpoint_id"] == "c-child", url
    # Handing off an altered row would re-sign the forgery under a fresh checksum.
    handoff = api.post(f"{URL}c-child/handoff/", {"target_agent_id": "b"})
    assert handoff.status_code == 409
    assert handoff.json()["error"]["code"] == "checksum_mismatch"
    assert Checkpoint.objects.count() == 2
    # Lists without payloads still list it: nothing unverified is served.
    listed = api.get(URL)
    assert listed.status_code == 200
    assert [c["checkpoint_id"] for c in listed.json()["results"]] == ["c-child", "c-parent"]


def test_it_names_tampered_rows_in_verify_integrity_and_exits_1(api: ApiClient) -> None:
    _save_pair(api)
    clean = StringIO()
    call_command("verify_integrity", stdout=clean)
    assert clean.getvalue().splitlines()[-1] == "checked 2 checkpoints, 0 mismatched"

    Checkpoint.objects.filter(checkpoint_id="c-child").update(metadata='{"forged":true}')
    out = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("verify_integrity", stdout=out)
    assert exit_info.value.code == 1
    lines = out.getvalue().splitlines()
    assert lines == [
        "MISMATCH workspace=acme thread=t1 namespace='' checkpoint=c-child",
        "checked 2 checkpoints, 1 mismatched",
    ]


@pytest.mark.parametrize("field", sorted(TAMPERED))
def test_it_catches_tampering_with_any_field_in_verify_integrity(api: ApiClient, field: str) -> None:
    _save_pair(api)
    Checkpoint.objects.filter(checkpoint_id="c-child").update(**{field: TAMPERED[field]})
    out = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("verify_integrity", stdout=out)
    assert exit_info.value.code == 1
    assert "1 mismatched" in out.getvalue()


def test_it_limits_verify_integrity_to_one_workspace(api: ApiClient, other_api: ApiClient) -> None:
    _save_pair(api)
    other_api.post(URL, {"agent_id": "a", "state": {}})
    Checkpoint.objects.filter(checkpoint_id="c-child").update(state="{}")
    out = StringIO()
    call_command("verify_integrity", "--workspace", "globex", stdout=out)
    assert out.getvalue().splitlines()[-1] == "checked 1 checkpoints, 0 mismatched"
    with pytest.raises(SystemExit):
        call_command("verify_integrity", "--workspace", "acme", stdout=StringIO())


ROUND_TRIP_STATES: dict[str, Any] = {
    "datetime_like": {"when": "2026-01-01T00:00:00+00:00", "date": "2026-01-01", "naive": "2026-01-01 00:00"},
    "unicode": {
        "cjk": "決定事項",
        "arabic": "مرحبا بالعالم",
        "emoji": "🧗‍♀️🏔️",
        "combining": "é",  # e + combining acute: not normalised to é
        "rtl_mark": "a\u200fb",
        "line_separators": "a\u2028b\u2029c",
    },
    "big_ints": {"big": 2**80, "min64": -(2**63), "max64": 2**63 - 1, "neg_big": -(2**100)},
    "floats": {"tenth": 0.1, "e16": 1e16, "tiny": 1e-7, "neg_zero": -0.0, "max": 1.7976931348623157e308},
    "empty_containers": {"o": {}, "l": [], "nested": [[], [{}], {"a": {"b": []}}]},
    "nul_in_strings": {"s": "a\x00b", "k\x00": "\x00"},
    "int_like_keys": {"1": "a", "2": "b", "10": "c", "-1": "d", "01": "e"},
    "mixed_top_level_list": [1, "two", None, True, 3.5],
    "scalar_state": "just a string",
    "escapes": {"q": 'say "hi"', "bs": "C:\\path\\u0000", "ctl": "\t\n\r\x1f"},
}


def _same_json(a: Any, b: Any) -> bool:
    """Equality that also tells 1 from 1.0 and True from 1, and -0.0 from 0.0."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize("name", sorted(ROUND_TRIP_STATES))
def test_it_round_trips_values_with_a_stable_checksum(api: ApiClient, name: str) -> None:
    state = ROUND_TRIP_STATES[name]
    saved = api.post(URL, {"agent_id": "a", "state": state, "context": {"s": state}, "metadata": {"n": name}})
    assert saved.status_code == 201, saved.json()
    body = saved.json()
    assert _same_json(body["state"], state)
    # The checksum a client computes over the API response is the stored one.
    assert record_checksum(body) == body["checksum"]

    first = api.get(f"{URL}{body['checkpoint_id']}/")
    second = api.get(f"{URL}{body['checkpoint_id']}/")
    assert first.status_code == 200, first.json()
    assert first["X-Checksum-Verified"] == "true"
    assert _same_json(first.json()["state"], state)
    assert _same_json(first.json()["context"], {"s": state})
    assert first.content == second.content
    assert record_checksum(first.json()) == body["checksum"]
    stored = Checkpoint.objects.get(checkpoint_id=body["checkpoint_id"])
    assert stored.checksum == body["checksum"]


def test_it_keeps_negative_zero_and_float_spelling_in_the_raw_response(api: ApiClient) -> None:
    saved = api.post(URL, {"agent_id": "a", "state": {"z": -0.0, "e": 1e16, "i": 1, "f": 1.0}}).json()
    raw = api.get(f"{URL}{saved['checkpoint_id']}/").content.decode()
    assert '"state":{"e":1e+16,"f":1.0,"i":1,"z":-0.0}' in raw


def _client_record(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "thread_id": "t1",
        "namespace": "",
        "checkpoint_id": "c-client",
        "parent_id": None,
        "agent_id": "planner",
        "framework": "custom",
        "schema_version": "1.0",
        "step_index": 0,
        "step_name": None,
        "run_id": None,
        "state": {"n": 1, "big": 2**80, "f": 0.1, "t": "決定"},
        "context": {},
        "metadata": {"m": True},
        "handoff_target": None,
        "handoff_from": None,
        "created_at": format_timestamp(datetime.now(UTC) - timedelta(seconds=5)),
    }
    record.update(overrides)
    return record


def _request_body(record: dict[str, Any], checksum: str) -> dict[str, Any]:
    body = {
        key: record[key]
        for key in ("checkpoint_id", "parent_id", "agent_id", "step_index", "state", "context", "metadata")
    }
    return {**body, "created_at": record["created_at"], "checksum": checksum}


def test_it_accepts_a_right_client_checksum(api: ApiClient) -> None:
    record = _client_record()
    checksum = record_checksum(record)
    response = api.post(URL, _request_body(record, checksum))
    assert response.status_code == 201, response.json()
    assert response.json()["checksum"] == checksum
    assert response.json()["created_at"] == record["created_at"]
    # And the idempotent retry with the same checksum is a 200.
    assert api.post(URL, _request_body(record, checksum)).status_code == 200


def test_it_accepts_a_client_checksum_over_any_spelling_of_created_at(api: ApiClient) -> None:
    record = _client_record(created_at="2026-01-01T02:00:00+02:00")
    response = api.post(URL, _request_body(record, record_checksum(record)))
    assert response.status_code == 201, response.json()
    assert response.json()["created_at"] == "2026-01-01T00:00:00.000000Z"


def test_it_accepts_a_client_checksum_for_a_child(api: ApiClient) -> None:
    parent = make_checkpoint(api.workspace, "t1", checkpoint_id="c-parent")
    record = _client_record(parent_id=parent.checkpoint_id, step_index=1)
    response = api.post(URL, _request_body(record, record_checksum(record)))
    assert response.status_code == 201, response.json()
    assert response.json()["parent_id"] == "c-parent"


@pytest.mark.parametrize(
    "wrong",
    [
        {"state": {"n": 2}},
        {"step_index": 1},
        {"created_at": "2026-01-01T00:00:00.000001Z"},
        {"agent_id": "other"},
        {"thread_id": "t2"},
    ],
)
def test_it_refuses_a_wrong_client_checksum_and_stores_nothing(api: ApiClient, wrong: dict[str, Any]) -> None:
    record = _client_record()
    checksum = record_checksum({**record, **wrong})
    response = api.post(URL, _request_body(record, checksum))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert list(error["details"]["fields"]) == ["checksum"]
    assert error["details"]["received"] == checksum
    assert error["details"]["computed"] == record_checksum(record)
    assert not Thread.objects.exists()
    assert not Checkpoint.objects.exists()
