"""The SDK defines each thing once: the checkpoint's fields (checkpoints.sdk.models) drive the save's body,
the checksummed record and the parsing of answers, without changing the wire format; and every API error
code, `diff_too_large` included, has its exception class, raised by both clients against the live server."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

import checkpoints.sdk as sdk
from checkpoints.integrity import CHECKSUM_FIELDS
from checkpoints.sdk import AsyncClient, CairnError, Client, DiffTooLarge
from checkpoints.sdk.errors import ERRORS_BY_CODE, error_from_response
from checkpoints.sdk.models import UNSET, Checkpoint, CheckpointDraft, wire
from checkpoints.sdk.transport import encode_body

# What a save has always sent (the server's contract): the hashed record but the ids in the URL and the
# handoff fields the server sets, plus the pin and the checksum. A field added to the model is deliberate.
SAVE_BODY = (set(CHECKSUM_FIELDS) - {"thread_id", "parent_id", "handoff_target", "handoff_from"}) | {
    "pinned",
    "checksum",
}


def _sent_bodies(client: Client) -> list[tuple[str, dict[str, Any]]]:
    sent: list[tuple[str, dict[str, Any]]] = []
    client.transport.http.event_hooks["request"].append(
        lambda r: sent.append((r.method, json.loads(r.content))) if r.content else None
    )
    return sent


def test_the_save_body_keeps_its_wire_format(client: Client) -> None:
    sent = _sent_bodies(client)
    head = client.checkpoint_save(thread_id="wire", agent_id="a", state={"n": 1}).checkpoint
    child = client.checkpoint_save(
        thread_id="wire", agent_id="a", state={"n": 2}, parent_id=head.checkpoint_id, ttl_seconds=60
    ).checkpoint

    (put_method, put_body), (post_method, post_body) = sent
    assert (put_method, set(put_body)) == ("PUT", SAVE_BODY)
    assert (post_method, set(post_body)) == ("POST", SAVE_BODY | {"parent_id", "ttl_seconds"})
    assert post_body["parent_id"] == head.checkpoint_id and post_body["ttl_seconds"] == 60
    assert post_body["checksum"] == child.checksum
    restored = client.checkpoint_get("wire", child.checkpoint_id)
    assert restored.verified and restored.parent_id == head.checkpoint_id and restored.step_index == 1


def test_one_field_list_drives_the_body_the_record_and_the_parsing() -> None:
    draft = CheckpointDraft.build(
        thread_id="t",
        checkpoint_id="c",
        agent_id="a",
        state={"x": 1},
        created_at=Checkpoint.from_dict(
            {"thread_id": "t", "checkpoint_id": "c", "created_at": "2026-01-02T03:04:05.000006Z"}
        ).created_at,
    )
    assert set(draft.record()) == set(CHECKSUM_FIELDS)
    assert draft.record()["created_at"] == "2026-01-02T03:04:05.000006Z"
    assert draft.ttl_seconds is UNSET and "ttl_seconds" not in draft.body(with_parent=False)
    assert draft.body(with_parent=True)["parent_id"] is None

    @dataclass(kw_only=True)
    class TaggedDraft(CheckpointDraft):
        priority: int = field(default=5, metadata=wire(sent=True))

    @dataclass(kw_only=True)
    class TaggedCheckpoint(Checkpoint):
        priority: int = field(default=0, metadata=wire(read=int))

    # A field declared once is sent by saves and read from answers, with nothing else to change.
    tagged = TaggedDraft.build(
        thread_id="t", checkpoint_id="c", agent_id="a", state={"x": 1}, created_at=draft.created_at
    )
    assert tagged.body(with_parent=False)["priority"] == 5
    assert tagged.checksum == draft.checksum  # not part of the hashed record
    sent = json.loads(encode_body(tagged.body(with_parent=True)))
    parsed = TaggedCheckpoint.from_dict({**sent, "thread_id": "t", "priority": "7"})
    assert parsed.priority == 7 and parsed.agent_id == "a" and parsed.created_at == draft.created_at
    assert parsed.has_payload and parsed.verify().verified

    minimal = Checkpoint.from_dict(
        {"thread_id": "t", "checkpoint_id": "c", "created_at": "2026-01-02T03:04:05Z"}
    )
    assert (minimal.namespace, minimal.framework, minimal.schema_version) == ("", "custom", "1.0")
    assert (minimal.state, minimal.pinned, minimal.has_payload, minimal.expires_at) == (
        None,
        False,
        False,
        None,
    )
    with pytest.raises(KeyError):
        Checkpoint.from_dict({"thread_id": "t", "created_at": "2026-01-02T03:04:05Z"})
    with pytest.raises(ValueError, match="expected a timestamp"):
        Checkpoint.from_dict({"thread_id": "t", "checkpoint_id": "c"})


def test_diff_too_large_is_its_own_exception_class() -> None:
    assert ERRORS_BY_CODE["diff_too_large"] is DiffTooLarge
    assert "DiffTooLarge" in sdk.__all__ and issubclass(DiffTooLarge, CairnError)
    error = error_from_response(
        422,
        {"error": {"code": "diff_too_large", "message": "too big", "details": {"limit": 10}}},
        {},
    )
    assert isinstance(error, DiffTooLarge)
    assert (error.status, error.error_code, error.details, str(error)) == (
        422,
        "diff_too_large",
        {"limit": 10},
        "[422 diff_too_large] too big",
    )
    # Without the envelope's code a 422 is not a diff that was too large.
    assert type(error_from_response(422, None, {})) is CairnError


def test_both_clients_raise_diff_too_large_from_the_server(
    client: Client, cairn_url: str, cairn_key: str, settings: SettingsWrapper
) -> None:
    first = client.checkpoint_save(thread_id="big", agent_id="a", state={"items": list(range(6))}).checkpoint
    second = client.checkpoint_save(thread_id="big", agent_id="a", state={"items": list(range(7))}).checkpoint
    assert client.checkpoint_diff("big", second.checkpoint_id).against == first.checkpoint_id

    settings.CAIRN_DIFF_MAX_NODES = 10
    with pytest.raises(DiffTooLarge) as raised:
        client.checkpoint_diff("big", second.checkpoint_id)
    assert raised.value.status == 422 and raised.value.error_code == "diff_too_large"
    assert raised.value.details["limit"] == 10
    assert "CAIRN_DIFF_MAX_NODES" in raised.value.message

    async def awaited() -> DiffTooLarge:
        async with AsyncClient(cairn_url, cairn_key) as twin:
            with pytest.raises(DiffTooLarge) as async_raised:
                await twin.checkpoint_diff("big", second.checkpoint_id, against=first.checkpoint_id)
            return async_raised.value

    async_error = asyncio.run(awaited())
    assert (async_error.status, async_error.details["limit"]) == (422, 10)
