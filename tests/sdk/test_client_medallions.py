"""Client against a live server: the medallion endpoints, thread summaries as jobs, and PUT state."""

from __future__ import annotations

import pytest

from checkpoints.medallion_schema import Evidence, MedallionScope
from checkpoints.sdk import Client, Conflict, NotFound, PreconditionFailed
from tests.medallions.fixtures import eager  # noqa: F401  (fixture: jobs run when published)

DRAFT = {
    "scope": {"graph_nodes": ["repo:sdk"], "tags": ["notes"]},
    "summary": {"high_level": "The SDK wraps every endpoint.", "subsystems": []},
    "decisions": [{"statement": "Use httpx.", "rationale": "Pooling and async.", "confidence": 0.9}],
}


def test_it_creates_edits_lists_and_deletes_agent_written_medallions(client: Client) -> None:
    created = client.medallion_create(DRAFT)
    medallion_id = created.meta.medallion_id
    assert created.meta.version == 1 and created.decisions[0].statement == "Use httpx."
    with pytest.raises(Conflict):
        client.medallion_create(DRAFT)  # one active medallion per exact scope

    edited = client.medallion_update(
        medallion_id,
        {"summary": {"high_level": "The SDK wraps every endpoint, sync and async."}},
        expected_version=1,
    )
    assert edited.meta.version == 2
    with pytest.raises(PreconditionFailed):
        client.medallion_update(medallion_id, {"status": "stale"}, expected_version=1)
    assert [m.meta.medallion_id for m in client.medallions_list(graph_nodes=["repo:sdk"])] == [medallion_id]
    assert [r.version for r in client.medallion_revisions(medallion_id)] == [2, 1]

    client.medallion_delete(medallion_id)
    with pytest.raises(NotFound):
        client.medallion_get(medallion_id)


@pytest.mark.usefixtures("eager")
def test_it_summarises_a_thread_as_a_job_and_waits_for_it(client: Client) -> None:
    client.thread_create("summarised", scope={"graph_nodes": ["repo:sdk"], "tags": ["session"]})
    client.messages_append(
        "summarised",
        [
            {"role": "user", "content": "Should the SDK retry writes?"},
            {"role": "assistant", "content": "We decided to retry only idempotent calls."},
        ],
    )
    job = client.thread_summarize("summarised")
    done = client.job_wait(job.job_id, timeout=30)
    assert done.status == "succeeded"
    found = client.medallions_list(graph_nodes=["repo:sdk"], tags=["session"])
    assert len(found) == 1 and found.results[0].meta.source_thread_id == "summarised"

    result = client.medallion_checkpoint(
        MedallionScope(graph_nodes=["repo:sdk"], tags=["session"]),
        Evidence(session_summary="We decided to document the retry policy."),
        wait=10,
    )
    assert result.medallion is not None and result.created is False and result.medallion.meta.version == 2


def test_it_puts_a_new_head_state(client: Client) -> None:
    first = client.thread_state_put("stateful", agent_id="a", state={"n": 1}).checkpoint
    second = client.thread_state_put("stateful", agent_id="a", state={"n": 2}).checkpoint
    assert second.parent_id == first.checkpoint_id and second.step_index == 1
    head = client.thread_state("stateful")
    assert head.checkpoint_id == second.checkpoint_id and head.state == {"n": 2} and head.verified
