"""Client against a live server: saves checksummed client-side with the whole record explicit, restores
re-hashed, one JSON normalisation (checkpnt's datetime and int-key bugs), heads and parents, and every
checkpoint endpoint."""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from checkpoints.integrity import record_checksum
from checkpoints.models import Checkpoint as CheckpointRow
from checkpoints.sdk import ChecksumMismatch, Client, Gone, NotJSONError, ValidationError
from tests.sdk.faults import Fault, faulty_client


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Point:
    x: int
    y: int


def _sent_bodies(client: Client) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    client.transport.http.event_hooks["request"].append(
        lambda r: sent.append(json.loads(r.content)) if r.content else None
    )
    return sent


def test_it_hashes_the_whole_record_client_side_and_verifies_every_restore(client: Client) -> None:
    sent = _sent_bodies(client)
    saved = client.checkpoint_save(
        thread_id="run-1", agent_id="planner", state={"step": 3}, metadata={"source": "sdk"}, step_name="plan"
    )
    body = sent[-1]
    # The fields the server would otherwise default are sent, so the checksum covers exactly what is stored.
    assert {"checksum", "created_at", "step_index", "checkpoint_id"} <= set(body)
    assert body["checksum"] == saved.checkpoint.checksum
    assert saved.created and saved.checkpoint.verified and saved.checkpoint.parent_id is None

    restored = client.checkpoint_get("run-1", saved.checkpoint.checkpoint_id)
    assert restored.verified and restored.state == {"step": 3}
    assert record_checksum(restored.record()) == restored.checksum == body["checksum"]
    assert client.checkpoint_get_by_id(saved.checkpoint.checkpoint_id).verified
    assert client.thread_state("run-1").checkpoint_id == saved.checkpoint.checkpoint_id


def test_it_normalises_values_once_so_the_hash_and_the_stored_value_agree(client: Client) -> None:
    when = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    state = {
        "when": when,
        "day": date(2026, 3, 4),
        "pair": (1, 2),
        "tags": {"b", "a"},
        1: "int key",
        "nested": {2: {"deeper": when}},
        "price": Decimal("10.50"),
        "id": uuid.UUID(int=5),
        "colour": Colour.RED,
        "point": Point(1, 2),
    }
    saved = client.checkpoint_save(thread_id="norm", agent_id="a", state=state, context={"at": when})
    restored = client.checkpoint_get("norm", saved.checkpoint.checkpoint_id)
    assert restored.state == {
        "when": "2026-03-04T05:06:07.891011+00:00",
        "day": "2026-03-04",
        "pair": [1, 2],
        "tags": ["a", "b"],
        "1": "int key",
        "nested": {"2": {"deeper": "2026-03-04T05:06:07.891011+00:00"}},
        "price": "10.50",
        "id": str(uuid.UUID(int=5)),
        "colour": "red",
        "point": {"x": 1, "y": 2},
    }
    assert restored.context == {"at": "2026-03-04T05:06:07.891011+00:00"}
    assert restored.verified


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ({"x": float("nan")}, "not a JSON number"),
        ({"x": float("inf")}, "not a JSON number"),
        ({1: "a", "1": "b"}, "collide"),
        ({"blob": b"\x00"}, "bytes"),
        ({"obj": object()}, "object is not JSON"),
    ],
)
def test_it_refuses_what_json_cannot_hold_before_sending_anything(
    client: Client, state: dict[Any, Any], problem: str
) -> None:
    sent = _sent_bodies(client)
    with pytest.raises(NotJSONError, match=problem):
        client.checkpoint_save(thread_id="bad", agent_id="a", state=state, parent_id=None)
    assert sent == []


def test_it_chains_on_the_head_and_follows_a_head_another_writer_moved(
    client: Client, cairn_url: str, cairn_key: str
) -> None:
    first = client.checkpoint_save(thread_id="chain", agent_id="a", state={"n": 1}).checkpoint
    with Client(cairn_url, cairn_key) as other:
        second = other.checkpoint_save(thread_id="chain", agent_id="b", state={"n": 2}).checkpoint
    assert second.parent_id == first.checkpoint_id and second.step_index == 1
    # This client still believes `first` is the head: If-Match fails (412), it re-reads and re-hashes.
    third = client.checkpoint_save(thread_id="chain", agent_id="a", state={"n": 3}).checkpoint
    assert third.parent_id == second.checkpoint_id and third.step_index == 2
    assert third.verified


def test_it_saves_roots_and_explicit_parents(client: Client, cairn_url: str, cairn_key: str) -> None:
    base = client.checkpoint_save(thread_id="tree", agent_id="a", state={"n": 0}, step_index=7).checkpoint
    client.checkpoint_save(thread_id="tree", agent_id="a", state={"n": 1})
    with Client(cairn_url, cairn_key) as fresh:  # does not know `base`: reads its step from the server
        branch = fresh.checkpoint_save(
            thread_id="tree", agent_id="a", state={"n": 2}, parent_id=base.checkpoint_id
        ).checkpoint
    assert branch.parent_id == base.checkpoint_id and branch.step_index == 8
    root = client.checkpoint_save(thread_id="tree", agent_id="a", state={"n": 3}, parent_id=None).checkpoint
    assert root.parent_id is None and root.step_index == 0
    with pytest.raises(ValidationError) as bad:
        client.checkpoint_save(thread_id="tree", agent_id="a", state={}, parent_id="nope", step_index=1)
    assert "parent_id" in bad.value.details["fields"]


def test_it_retries_a_save_whose_answer_was_lost_without_saving_twice(cairn_url: str, cairn_key: str) -> None:
    client, wire = faulty_client(cairn_url, cairn_key, Fault("PUT", "/threads/lost/state/", "lost"))
    with client:
        saved = client.checkpoint_save(thread_id="lost", agent_id="a", state={"n": 1})
        assert wire.count("PUT", "/threads/lost/state/") == 2
        assert saved.created is False  # the retry found the checkpoint the first attempt stored
        page = client.checkpoints_list("lost")
        assert [c.checkpoint_id for c in page] == [saved.checkpoint.checkpoint_id]


def test_it_serves_every_checkpoint_endpoint(client: Client) -> None:
    first = client.checkpoint_save(
        thread_id="full", agent_id="planner", state={"todo": ["a"]}, metadata={"kind": "x"}, run_id="r1"
    ).checkpoint
    second = client.checkpoint_save(
        thread_id="full", agent_id="planner", state={"todo": ["a", "b"]}, metadata={"kind": "y"}
    ).checkpoint

    timeline = client.checkpoints_list("full", include_state=True)
    assert [c.checkpoint_id for c in timeline] == [second.checkpoint_id, first.checkpoint_id]
    assert all(c.verified for c in timeline)
    assert [c.checkpoint_id for c in client.checkpoints_list("full", metadata={"kind": "x"})] == [
        first.checkpoint_id
    ]
    assert [c.checkpoint_id for c in client.checkpoints_list("full", before=second.checkpoint_id)] == [
        first.checkpoint_id
    ]
    assert [c.checkpoint_id for c in client.checkpoints_list("full", run_id="r1")] == [first.checkpoint_id]

    diff = client.checkpoint_diff("full", second.checkpoint_id)
    assert diff.against == first.checkpoint_id
    assert {"op": "add", "path": "/state/todo/1", "value": "b"} in diff.patch
    lineage = client.checkpoint_lineage("full", second.checkpoint_id)
    assert [c.checkpoint_id for c in lineage] == [first.checkpoint_id]

    handed = client.checkpoint_handoff("full", second.checkpoint_id, target_agent_id="reviewer")
    assert (handed.agent_id, handed.handoff_from, handed.parent_id) == (
        "reviewer",
        "planner",
        second.checkpoint_id,
    )
    assert handed.metadata == {"kind": "y"} and handed.verified
    inbox = client.checkpoints_timeline(handoff_target="reviewer")
    assert [c.checkpoint_id for c in inbox] == [handed.checkpoint_id]

    pinned = client.checkpoint_set_ttl("full", first.checkpoint_id, ttl_seconds=3600, pinned=True)
    assert pinned.pinned and pinned.expires_at is not None

    client.pending_writes_put(
        "full", "not-saved-yet", task_id="t1", writes=[{"channel": "c", "value": {"v": 1}}]
    )
    assert [(w.channel, w.value) for w in client.pending_writes_list("full", "not-saved-yet")] == [
        ("c", {"v": 1})
    ]

    client.checkpoint_expire("full", second.checkpoint_id)
    with pytest.raises(Gone) as gone:
        client.checkpoint_get("full", second.checkpoint_id)
    tombstone = gone.value.tombstone
    assert tombstone is not None and tombstone.is_tombstone and tombstone.state is None
    assert tombstone.checksum == second.checksum


def test_it_detects_a_row_altered_in_the_database(client: Client) -> None:
    saved = client.checkpoint_save(thread_id="altered", agent_id="a", state={"n": 1}).checkpoint
    CheckpointRow.objects.filter(checkpoint_id=saved.checkpoint_id).update(state='{"n":2}')
    with pytest.raises(ChecksumMismatch) as refused:
        client.checkpoint_get("altered", saved.checkpoint_id)
    assert refused.value.status == 409  # the server refused it before the SDK had to


def test_it_speaks_to_the_api_only_through_json_over_http(client: Client) -> None:
    assert isinstance(client.transport.http, httpx.Client)
    assert client.transport.http.headers["user-agent"].startswith("cairn-sdk/")
