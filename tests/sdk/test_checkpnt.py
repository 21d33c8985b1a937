"""checkpnt parity against a live server: save / restore / handoff / timeline / expire with the seed's
argument names, and the seed's bugs (docs/integrations/checkpnt.md lists them) proven absent."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from checkpoints.sdk import Client as CairnClient
from checkpoints.sdk import Gone
from checkpoints.sdk.checkpnt import Client, Framework, SyncClient


def test_it_saves_and_restores_state_holding_datetimes_and_int_keys(cairn_url: str, cairn_key: str) -> None:
    """checkpnt hashed one encoding and stored another: a datetime or an int key made a checkpoint
    unrestorable. Here both are normalised once, so the checksum verifies on restore."""
    when = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)

    async def scenario() -> None:
        async with Client(cairn_url, cairn_key) as client:
            checkpoint_id = await client.save(
                agent_id="invoice-processor",
                framework=Framework.LANGGRAPH,
                execution_state={"due": when, 1: "first", "lines": (1, 2)},
                session_id="run-001",
                context={"invoice_id": "INV-4821"},
                step_index=3,
                step_name="validate",
                ttl_seconds=3600,
                customer="acme",
            )
            checkpoint = await client.restore(checkpoint_id)
            assert checkpoint.verified
            assert checkpoint.execution_state == {"due": when.isoformat(), "1": "first", "lines": [1, 2]}
            assert checkpoint.agent_context == {"invoice_id": "INV-4821"}
            assert (checkpoint.session_id, checkpoint.step_index, checkpoint.step_name) == (
                "run-001",
                3,
                "validate",
            )
            assert checkpoint.framework is Framework.LANGGRAPH
            assert checkpoint.metadata == {"customer": "acme"}
            assert checkpoint.ttl_seconds == 3600

    asyncio.run(scenario())


def test_it_chains_a_session_hands_off_and_keeps_metadata(cairn_url: str, cairn_key: str) -> None:
    async def scenario() -> None:
        async with Client(cairn_url, cairn_key) as client:
            first = await client.save(
                "processor", Framework.CUSTOM, {"n": 1}, session_id="s1", reviewer="kim"
            )
            second = await client.save("processor", Framework.CUSTOM, {"n": 2}, session_id="s1")
            restored = await client.restore(second)
            assert restored.parent_id == first != second  # the real parent, never itself
            assert restored.step_index == 1
        async with Client(cairn_url, cairn_key) as other:  # knows nothing of `first`: finds it by id
            handed_id = await other.handoff(
                first, target_agent_id="approval-agent", context={"why": "review"}
            )
            handed = await other.restore(handed_id)
        assert (handed.agent_id, handed.handoff_from, handed.parent_id) == (
            "approval-agent",
            "processor",
            first,
        )
        assert handed.metadata == {"reviewer": "kim"}  # checkpnt dropped it
        assert handed.execution_state == {"n": 1} and handed.agent_context == {"why": "review"}

    asyncio.run(scenario())


def test_it_lists_the_timeline_newest_first_with_limit(cairn_url: str, cairn_key: str) -> None:
    with SyncClient(cairn_url, cairn_key) as client:
        ids = [client.save("agent-a", "custom", {"n": n}, session_id="tl") for n in range(3)]
        client.save("agent-b", "custom", {"n": 9}, session_id="tl")
        elsewhere = client.save("agent-a", "custom", {"n": 7}, session_id="tl-other")

        history = client.timeline(agent_id="agent-a", session_id="tl")
        assert [c.checkpoint_id for c in history] == ids[::-1]
        assert [c.step_index for c in history] == [2, 1, 0] and history[0].execution_state == {"n": 2}
        assert [c.checkpoint_id for c in client.timeline("agent-a", "tl", limit=2)] == ids[:0:-1]
        everywhere = client.timeline("agent-a")
        assert [c.checkpoint_id for c in everywhere] == [elsewhere, *ids[::-1]]
        with_state = client.timeline("agent-a", "tl", limit=1)
        assert with_state[0].execution_state == {"n": 2} and with_state[0].verified
        with pytest.raises(ValueError, match="limit"):
            client.timeline("agent-a", limit=0)


def test_expiring_one_checkpoint_leaves_the_rest_of_the_session(
    cairn_url: str, cairn_key: str, client: CairnClient
) -> None:
    """checkpnt: one expired checkpoint expired a whole session's index, and deleting one lost the latest
    pointer. Here only that checkpoint becomes a tombstone, and the session's latest is the one before it."""
    with SyncClient(cairn_url, cairn_key) as checkpnt:
        first = checkpnt.save("a", Framework.CUSTOM, {"n": 1}, session_id="exp")
        second = checkpnt.save("a", Framework.CUSTOM, {"n": 2}, session_id="exp")
        checkpnt.expire(second)
        with pytest.raises(Gone) as gone:
            checkpnt.restore(second)
        assert gone.value.tombstone is not None and gone.value.tombstone.parent_id == first
        assert checkpnt.restore(first).execution_state == {"n": 1}
        assert [c.checkpoint_id for c in checkpnt.timeline("a", "exp")] == [first]
    assert client.thread_state("exp").checkpoint_id == first
