"""Summarising a thread: evidence from the messages after the last summary, the thread-scope medallion
upserted, the marker advanced in the same transaction; automatic summaries every N messages."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.exceptions import Unavailable, ValidationFailed
from checkpoints.models import AuditEvent, Job, Medallion, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.jobs import job_execute
from checkpoints.services.medallion_summaries import (
    MESSAGES_PER_REVISION,
    medallion_maybe_autosummarize,
    medallion_summarize_thread,
    thread_evidence,
    thread_summarize_submit,
)
from checkpoints.services.messages import messages_append
from tests.jobs.helpers import broker_down
from tests.llm import transcripts as t
from tests.medallions.fixtures import result_of

pytestmark = pytest.mark.django_db
ACTOR = Actor.system("test")
SCOPE = {"graph_nodes": ["repo:billing-service"], "tags": ["refactor"]}


def scoped_thread(
    workspace: Workspace, thread_id: str = "run-1", scope: dict[str, Any] | None = None
) -> Thread:
    return Thread.objects.create(
        workspace=workspace, thread_id=thread_id, scope=SCOPE if scope is None else scope
    )


def append(workspace: Workspace, thread_id: str, *lines: str) -> None:
    """Append transcript lines ("speaker: text") as user/assistant messages."""
    messages = []
    for line in lines:
        speaker, text = line.split(": ", 1)
        role = "user" if speaker == "maya" else "assistant"
        messages.append({"role": role, "content": text, "name": speaker})
    messages_append(workspace=workspace, thread_id=thread_id, messages=messages)


def summarize(thread: Thread) -> Job:
    """Submit and run the job in-process, as the worker would (job_execute claims it first)."""
    job = Job.objects.create(
        workspace=thread.workspace,
        kind=Job.Kind.SUMMARIZE,
        params={"operation": "thread", "thread_id": thread.thread_id},
    )
    finished = job_execute(job.pk, medallion_summarize_thread)
    assert finished is not None
    return finished


def test_it_summarises_a_thread_into_the_medallion_of_its_scope(workspace: Workspace) -> None:
    thread = scoped_thread(workspace)
    append(workspace, "run-1", *t.TRANSCRIPT)
    job = summarize(thread)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert result_of(job)["messages_summarized"] == 50 and result_of(job)["summarized_through_seq"] == 50
    assert result_of(job)["created"] is True and result_of(job)["revisions"] == 1
    medallion = Medallion.objects.get()
    assert medallion.graph_nodes == SCOPE["graph_nodes"] and medallion.tags == SCOPE["tags"]
    assert medallion.source_thread == thread
    statements = " ".join(d["statement"] for d in medallion.decisions)
    for phrase in t.STATED_DECISIONS:
        assert phrase.lower() in statements.lower(), phrase
    first, last = thread.messages.order_by("seq").first(), thread.messages.order_by("seq").last()
    assert first is not None and last is not None
    assert (medallion.knowledge_min_ts, medallion.knowledge_max_ts) == (first.created_at, last.created_at)
    evidence: dict[str, Any] = medallion.revisions.get().evidence or {}
    assert evidence["session_summary"].startswith("Task: Today we start refactoring the billing service")
    assert evidence["transcripts"][1].startswith("assistant (planner): The invoice generator")
    assert evidence["artefacts"]["messages"] == {"from_seq": 1, "to_seq": 50, "count": 50}
    assert "make profile-billing" in evidence["artefacts"]["references"]
    thread.refresh_from_db()
    assert thread.last_summarized_seq == 50


def test_the_next_summary_folds_in_only_the_new_messages(workspace: Workspace) -> None:
    thread = scoped_thread(workspace)
    append(workspace, "run-1", *t.TRANSCRIPT)
    summarize(thread)
    append(workspace, "run-1", *t.SECOND_SESSION["transcripts"])
    job = summarize(thread)
    assert result_of(job)["messages_summarized"] == len(t.SECOND_SESSION["transcripts"])
    medallion = Medallion.objects.get()
    assert medallion.version == 2
    evidence: dict[str, Any] = medallion.revisions.get(version=2).evidence or {}
    assert evidence["artefacts"]["messages"]["from_seq"] == 51
    questions = " ".join(q["question"] for q in medallion.open_questions)
    assert "rounding mode" not in questions and "correction notes be emailed" in questions


def test_submission_refuses_a_thread_without_scope_or_new_messages(workspace: Workspace) -> None:
    unscoped = scoped_thread(workspace, "bare", scope={"graph_nodes": [" "], "tags": []})
    append(workspace, "bare", "maya: hello there, we start now.")
    with pytest.raises(ValidationFailed, match="no scope"):
        thread_summarize_submit(thread=unscoped, actor=ACTOR)
    empty = scoped_thread(workspace, "empty")
    with pytest.raises(ValidationFailed, match="no new messages"):
        thread_summarize_submit(thread=empty, actor=ACTOR)
    assert not Job.objects.exists()


def test_submission_queues_an_audited_job(
    workspace: Workspace, eager_celery: None, django_capture_on_commit_callbacks: Any
) -> None:
    thread = scoped_thread(workspace)
    append(workspace, "run-1", "maya: Please refactor the tax module.")
    with django_capture_on_commit_callbacks(execute=True):
        job = thread_summarize_submit(thread=thread, actor=ACTOR)
    assert job.status == Job.Status.QUEUED and job.params["thread_id"] == "run-1"
    event = AuditEvent.objects.get(action="thread.summarize")
    assert (event.target_id, event.details["job_id"]) == ("run-1", str(job.job_id))


def test_a_submission_the_broker_refuses_leaves_neither_a_job_nor_an_audit_event(
    workspace: Workspace, django_capture_on_commit_callbacks: Any
) -> None:
    thread = scoped_thread(workspace)
    append(workspace, "run-1", "maya: Please refactor the tax module.")
    with broker_down(), pytest.raises(Unavailable), django_capture_on_commit_callbacks(execute=True):
        thread_summarize_submit(thread=thread, actor=ACTOR)
    assert not Job.objects.exists()
    assert not AuditEvent.objects.filter(action="thread.summarize").exists()


def test_a_long_backlog_becomes_several_revisions(workspace: Workspace) -> None:
    thread = scoped_thread(workspace)
    total = MESSAGES_PER_REVISION + 20
    for start in range(0, total, 500):
        messages_append(
            workspace=workspace,
            thread_id="run-1",
            messages=[
                {"role": "user", "content": f"Message {i}: we will keep going."}
                for i in range(start, min(total, start + 500))
            ],
        )
    job = summarize(thread)
    assert result_of(job)["revisions"] == 2 and result_of(job)["messages_summarized"] == total
    assert Medallion.objects.get().version == 2


def test_a_concurrent_summary_does_not_fold_the_same_messages_twice(workspace: Workspace) -> None:
    thread = scoped_thread(workspace)
    append(workspace, "run-1", *t.TRANSCRIPT[:10])
    first, second = summarize(thread), summarize(thread)
    assert result_of(first)["messages_summarized"] == 10
    # The second job found the marker already past every message: it succeeds and writes nothing.
    assert second.status == Job.Status.SUCCEEDED and result_of(second)["messages_summarized"] == 0
    assert result_of(second)["medallion_id"] == result_of(first)["medallion_id"]
    assert Medallion.objects.get().version == 1


def test_a_deleted_thread_fails_the_job_with_the_reason(workspace: Workspace) -> None:
    thread = scoped_thread(workspace)
    append(workspace, "run-1", *t.TRANSCRIPT[:3])
    job = Job.objects.create(
        workspace=workspace, kind=Job.Kind.SUMMARIZE, params={"operation": "thread", "thread_id": "run-1"}
    )
    thread.delete()
    finished = job_execute(job.pk, medallion_summarize_thread)
    assert finished is not None and finished.status == Job.Status.FAILED
    assert "was deleted before it could be summarised" in finished.error


def test_evidence_from_tool_calls_and_content_blocks(workspace: Workspace) -> None:
    thread = scoped_thread(workspace)
    messages_append(
        workspace=workspace,
        thread_id="run-1",
        messages=[
            {
                "role": "user",
                "content": "Find the slow query. See https://grafana.example.com/d/x for graphs.",
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "run_sql", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "content": "x" * 10_000, "tool_call_id": "c1", "name": "run_sql"},
            {
                "role": "assistant",
                "content": "",
                "content_blocks": [{"type": "text", "text": "Found it in `billing/tax.py`."}],
            },
        ],
    )
    evidence = thread_evidence(thread, list(thread.messages.order_by("seq")))
    assert evidence.transcripts[1] == "assistant: [calls run_sql]"
    assert len(evidence.transcripts[2]) < 4100 and evidence.transcripts[2].endswith("…")
    assert evidence.transcripts[3] == "assistant: Found it in `billing/tax.py`."
    assert evidence.session_summary == "Task: Find the slow query. Latest: Found it in `billing/tax.py`."
    assert evidence.artefacts["tools_called"] == ["run_sql"]
    assert evidence.artefacts["references"] == ["https://grafana.example.com/d/x", "billing/tax.py"]


def test_it_autosummarises_every_n_messages(
    workspace: Workspace, django_capture_on_commit_callbacks: Any
) -> None:
    thread = scoped_thread(workspace)
    append(workspace, "run-1", *t.TRANSCRIPT[:4])
    assert medallion_maybe_autosummarize(thread=thread) is None  # the workspace did not ask for it
    Workspace.objects.filter(pk=workspace.pk).update(auto_summarize_every=5)
    thread = Thread.objects.select_related("workspace").get(pk=thread.pk)
    assert medallion_maybe_autosummarize(thread=thread) is None  # 4 < 5
    append(workspace, "run-1", t.TRANSCRIPT[4])
    with django_capture_on_commit_callbacks() as published:
        job = medallion_maybe_autosummarize(thread=thread)
    # Two hooks: publish the job, then (only if publishing worked) audit the submission.
    assert job is not None and len(published) == 2
    assert job.params["requested_by"]["label"] == "auto-summarize"
    # One is queued already: no second job for the same backlog.
    assert medallion_maybe_autosummarize(thread=thread) is None
    assert Job.objects.count() == 1
