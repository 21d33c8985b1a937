"""Client against a live server: threads, messages, jobs, retention, the schema and the health check."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checkpoints.models import ApiKey, Workspace
from checkpoints.sdk import Client, Conflict, NotFound
from tests.sdk.faults import Fault, faulty_client


def test_it_manages_threads(client: Client) -> None:
    created = client.thread_create(
        "t-main", name="Main", user_id="alice", tags=["red"], metadata={"k": 1}, ttl_seconds=3600
    )
    assert (created.thread_id, created.user_id, created.tags, created.ttl_seconds) == (
        "t-main",
        "alice",
        ["red"],
        3600,
    )
    with pytest.raises(Conflict):
        client.thread_create("t-main")
    client.thread_create("t-other", user_id="bob", tags=["blue"])
    assert [t.thread_id for t in client.threads_list(user_id="alice")] == ["t-main"]
    assert [t.thread_id for t in client.threads_list(tags=["blue", "green"])] == ["t-other"]
    assert [t.thread_id for t in client.threads_list(q="mai")] == ["t-main"]

    first = client.checkpoint_save(thread_id="t-main", agent_id="a", state={"n": 1}).checkpoint
    client.messages_append("t-main", [{"role": "user", "content": "hello"}])
    detail = client.thread_get("t-main")
    assert (detail.head, detail.checkpoint_count, detail.message_count) == (first.checkpoint_id, 1, 1)
    assert detail.storage_bytes and detail.storage_bytes > 0
    assert detail.expiry_source == "thread" and detail.effective_expires_at == detail.expires_at

    updated = client.thread_update("t-main", name="Renamed", tags=["red", "hot"], pinned=True)
    assert (updated.name, updated.tags, updated.pinned) == ("Renamed", ["red", "hot"], True)
    assert (updated.effective_expires_at, updated.expiry_source) == (None, "pinned")

    second = client.checkpoint_save(thread_id="t-main", agent_id="a", state={"n": 2}).checkpoint
    fork = client.thread_fork("t-main", checkpoint_id=first.checkpoint_id, new_thread_id="t-fork")
    assert fork.forked_from is not None and fork.forked_from["checkpoint_id"] == first.checkpoint_id
    assert client.thread_state("t-fork").state == {"n": 1}
    copy = client.thread_copy("t-main", "t-copy")
    assert copy.thread_id == "t-copy"
    assert [c.checkpoint_id for c in client.checkpoints_list("t-copy")] == [
        second.checkpoint_id,
        first.checkpoint_id,
    ]
    assert client.thread_prune("t-copy", "keep_latest") == 1
    assert [c.checkpoint_id for c in client.checkpoints_list("t-copy")] == [second.checkpoint_id]
    assert client.thread_storage("t-main")

    # `user_id` scopes any thread call to one end user: another user's thread is a 404, like a missing one.
    assert client.thread_get("t-main", user_id="alice").thread_id == "t-main"
    with pytest.raises(NotFound):
        client.thread_get("t-main", user_id="bob")
    with pytest.raises(NotFound):
        client.messages_append("t-main", [{"role": "user", "content": "bob"}], user_id="bob")
    with pytest.raises(NotFound):
        client.thread_delete("t-main", user_id="bob")

    client.thread_delete("t-main", user_id="alice")
    with pytest.raises(NotFound):
        client.thread_get("t-main")


def test_it_pages_through_every_thread(client: Client) -> None:
    for n in range(5):
        client.thread_create(f"page-{n}", user_id="pager")
    first = client.threads_list(user_id="pager", limit=2)
    assert len(first) == 2 and first.next_cursor is not None
    everything = [t.thread_id for t in client.paginate(client.threads_list, user_id="pager", limit=2)]
    assert sorted(everything) == [f"page-{n}" for n in range(5)]
    with pytest.raises(ValueError, match="limit"):
        client.threads_list(limit=0)  # never "everything" (a pyagenity bug)


def test_it_appends_searches_and_deletes_messages(client: Client) -> None:
    appended = client.messages_append(
        "chat",
        [
            {"role": "user", "content": "Where is the décision about 決定?"},
            {"role": "assistant", "content": "It was made yesterday.", "metadata": {"model": "m"}},
            {"role": "tool", "content": "42", "tool_call_id": "call-1", "name": "calc"},
        ],
    )
    assert [m.seq for m in appended] == [1, 2, 3]
    assert all(m.message_id for m in appended)  # ids chosen client-side: the append can be retried
    assert [m.content for m in client.messages_list("chat", role="assistant")] == ["It was made yesterday."]
    assert [m.seq for m in client.messages_list("chat", after_seq=1)] == [2, 3]
    assert [m.seq for m in client.messages_list("chat", search="décision")] == [1]
    assert [m.thread_id for m in client.messages_search(search="決定")] == ["chat"]

    message = client.message_get("chat", appended[2].message_id)
    assert (message.tool_call_id, message.name) == ("call-1", "calc")
    client.message_delete("chat", appended[2].message_id)
    with pytest.raises(NotFound):
        client.message_get("chat", appended[2].message_id)


def test_it_records_lists_and_deletes_findings(client: Client) -> None:
    step = client.checkpoint_save(thread_id="audited", agent_id="a", state={"n": 1}).checkpoint
    on_step = client.annotation_create(
        "audited", "Answered the wrong question", verdict="wrong", checkpoint_id=step.checkpoint_id
    )
    on_thread = client.annotation_create("audited", "Worth a second look")
    assert (on_step.checkpoint_id, on_step.verdict, on_step.actor_type) == (
        step.checkpoint_id,
        "wrong",
        "api_key",
    )
    assert (on_thread.checkpoint_id, on_thread.namespace, on_thread.verdict) == (None, None, None)
    assert on_step.namespace == ""
    assert on_step.author.startswith("key:")
    listed = client.annotations_list("audited")
    assert [a.comment for a in listed] == ["Worth a second look", "Answered the wrong question"]
    client.annotation_delete("audited", on_thread.annotation_id)
    assert [a.annotation_id for a in client.annotations_list("audited")] == [on_step.annotation_id]
    with pytest.raises(NotFound):
        client.annotation_create("audited", "x", checkpoint_id="no-such-checkpoint")


def test_it_retries_a_message_append_whose_answer_was_lost(cairn_url: str, cairn_key: str) -> None:
    client, wire = faulty_client(cairn_url, cairn_key, Fault("POST", "/threads/retry-chat/messages/", "lost"))
    with client:
        appended = client.messages_append("retry-chat", [{"role": "user", "content": "once"}])
        assert wire.count("POST", "/threads/retry-chat/messages/") == 2
        assert [m.seq for m in appended] == [1]
        assert [m.content for m in client.messages_list("retry-chat")] == ["once"]


def test_it_reads_jobs_retention_schema_and_health(
    client: Client, cairn_url: str, sdk_workspace: Workspace, make_key: Callable[..., str]
) -> None:
    policy = client.retention_get()
    assert "keep_latest" in policy or "default_ttl_seconds" in policy
    with Client(cairn_url, make_key(sdk_workspace, ApiKey.Scope.ADMIN)) as admin:
        changed = admin.retention_put(
            {**{k: v for k, v in policy.items() if k != "workspace"}, "keep_latest": 5}
        )
        assert changed["keep_latest"] == 5
    assert isinstance(client.retention_preview(), dict)

    job = client.retention_sweep()
    assert job.kind == "sweep" and job.status in ("queued", "running", "succeeded")
    assert client.job_get(job.job_id).job_id == job.job_id
    assert job.job_id in [j.job_id for j in client.jobs_list(kind="sweep")]

    assert client.schema()["openapi"].startswith("3.")
    assert client.health()["database"] == "ok"
