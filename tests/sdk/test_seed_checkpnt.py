"""checkpnt's documented API on a live Cairn: restore(verify), Checkpoint's methods, expire's answers, the
exceptions a checkpnt user catches, CheckpointBuilder and `_backend`, LangGraphAdapter, and the local
backends' constructors answering with the one-line switch."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from checkpoints.sdk import ChecksumMismatch, Gone, NotFound
from checkpoints.sdk import Client as CairnClient
from checkpoints.sdk.checkpnt import (
    CheckpntError,
    Checkpoint,
    CheckpointBuilder,
    CheckpointIntegrityError,
    CheckpointNotFoundError,
    Client,
    Framework,
    LangGraphAdapter,
    SyncClient,
)


def test_it_restores_verified_checkpoints_that_round_trip_through_dicts(
    cairn_url: str, cairn_key: str
) -> None:
    async def scenario() -> None:
        async with Client(cairn_url, cairn_key) as client:
            checkpoint_id = await client.save("agent", Framework.CUSTOM, {"n": 1}, session_id="dicts")
            checkpoint = await client.restore(checkpoint_id, verify=True)
            assert checkpoint.verify_integrity() and not checkpoint.is_expired()
            again = Checkpoint.from_dict(checkpoint.as_dict())
            assert again.verify_integrity() and again.checksum == checkpoint.checksum
            assert again.as_dict() == checkpoint.as_dict()
            assert (
                checkpoint.as_dict()["session_id"] == "dicts"
                and checkpoint.as_dict()["framework"] == "custom"
            )
            tampered = Checkpoint.from_dict({**checkpoint.as_dict(), "metadata": {"who": "mallory"}})
            assert not tampered.verify_integrity()  # the checksum covers metadata too, not only the state

    asyncio.run(scenario())


def test_expire_answers_true_then_false_and_restore_raises_not_found(cairn_url: str, cairn_key: str) -> None:
    with SyncClient(cairn_url, cairn_key) as client:
        checkpoint_id = client.save("agent", "custom", {"n": 1}, session_id="exp", ttl_seconds=60)
        assert client.restore(checkpoint_id).ttl_seconds == 60
        assert client.expire(checkpoint_id) is True
        assert client.expire(checkpoint_id) is False  # already expired
        assert client.expire("no-such-checkpoint") is False  # checkpnt: False, not an exception
        with pytest.raises(CheckpointNotFoundError) as expired:
            client.restore(checkpoint_id)
        assert isinstance(expired.value, Gone) and expired.value.checkpoint_id == checkpoint_id
        assert expired.value.tombstone is not None and expired.value.tombstone.checkpoint_id == checkpoint_id
        with pytest.raises(CheckpointNotFoundError) as unknown:
            client.restore("no-such-checkpoint")
        assert isinstance(unknown.value, NotFound) and str(unknown.value).endswith(
            "Checkpoint not found: no-such-checkpoint"
        )


def test_it_raises_the_integrity_error_for_a_tampered_checkpoint(
    cairn_url: str, cairn_key: str, client: CairnClient
) -> None:
    from checkpoints.models import Checkpoint as Row

    with SyncClient(cairn_url, cairn_key) as checkpnt:
        checkpoint_id = checkpnt.save("agent", "custom", {"amount": 10}, session_id="tamper")
        Row.objects.filter(checkpoint_id=checkpoint_id).update(step_name="forged")
        with pytest.raises(CheckpointIntegrityError) as tampered:
            checkpnt.restore(checkpoint_id, verify=False)  # Cairn verifies every restore
    assert isinstance(tampered.value, ChecksumMismatch) and tampered.value.checkpoint_id == checkpoint_id


def test_a_built_checkpoint_is_saved_under_its_id_through_the_backend(cairn_url: str, cairn_key: str) -> None:
    built = (
        CheckpointBuilder(agent_id="invoice-agent", framework=Framework.LANGGRAPH)
        .session("run-2026")
        .step(7, name="validate")
        .execution_state({"due": datetime(2026, 1, 2, tzinfo=UTC), 1: "one"})
        .context({"total": 42})
        .tag(customer="acme")
        .ttl(3600)
        .build()
    )
    assert built.verify_integrity() and built.execution_state == {
        "due": "2026-01-02T00:00:00+00:00",
        "1": "one",
    }
    assert built.ttl_seconds == 3600 and built.expires_at == built.created_at + timedelta(hours=1)

    async def scenario() -> Checkpoint | None:
        async with Client(cairn_url, cairn_key) as client:
            assert await client._backend.save(built) == built.checkpoint_id
            assert await client._backend.load("no-such-checkpoint") is None
            latest = await client._backend.latest("invoice-agent", "run-2026")
            assert latest is not None and latest.checkpoint_id == built.checkpoint_id
            return await client._backend.load(built.checkpoint_id)

    stored = asyncio.run(scenario())
    assert stored is not None and stored.verify_integrity()
    assert (stored.step_index, stored.step_name, stored.metadata) == (7, "validate", {"customer": "acme"})
    assert stored.execution_state == built.execution_state and stored.ttl_seconds == 3600


def test_the_langgraph_adapter_extracts_and_reconstructs(cairn_url: str, cairn_key: str) -> None:
    snapshot = {
        "values": {"messages": ["hi"], "step": 3},
        "next": ("tools",),
        "config": {"configurable": {"thread_id": "t-1", "checkpoint_id": "c-3"}},
        "metadata": {"step": 3, "source": "loop"},
    }
    adapter = LangGraphAdapter()
    checkpoint = adapter.extract(snapshot, agent_id="my-agent", context={"invoice_id": "INV-001"})
    assert (checkpoint.session_id, checkpoint.step_index, checkpoint.step_name) == ("t-1", 3, "before:tools")
    with SyncClient(cairn_url, cairn_key) as client:
        client._backend.save(checkpoint)
        restored = adapter.reconstruct(client.restore(checkpoint.checkpoint_id))
    assert restored["values"] == {"messages": ["hi"], "step": 3} and restored["next"] == ["tools"]
    assert restored["config"]["configurable"]["checkpoint_id"] == "c-3"
    assert restored["agent_context"] == {"invoice_id": "INV-001"} and restored["thread_id"] == "t-1"


def test_the_local_backends_name_the_one_line_switch() -> None:
    with pytest.raises(
        CheckpntError, match=r"Replace `Client.sqlite\('./dev.db'\)` with `Client.from_env\(\)`"
    ):
        Client.sqlite("./dev.db")
    with pytest.raises(CheckpntError, match="checkpnt's Redis backend is not part of Cairn"):
        SyncClient.redis()


def test_an_unknown_session_has_no_latest_and_an_empty_history(cairn_url: str, cairn_key: str) -> None:
    """checkpnt's backends answer None and [] for a session they have never seen, not an error."""

    async def scenario() -> None:
        async with Client(cairn_url, cairn_key) as client:
            assert await client._backend.latest("agent", "never-saved") is None
            assert await client._backend.history("agent", "never-saved") == []
            assert await client.timeline("agent", "never-saved") == []
            await client.save("agent", Framework.CUSTOM, {"n": 1}, session_id="saved")
            assert await client._backend.latest("other-agent", "saved") is None

    asyncio.run(scenario())
    with SyncClient(cairn_url, cairn_key) as client:
        assert client._backend.latest("agent", "never-saved") is None
        assert client._backend.history("agent", "never-saved") == []
        assert client.timeline("agent", "never-saved") == []
