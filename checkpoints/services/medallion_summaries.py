"""Summarising a thread into the medallion of its scope: on request (`POST threads/{id}/summarize/`) and
automatically after every N new messages (`Workspace.auto_summarize_every`).

The evidence is the thread's messages after `Thread.last_summarized_seq`. The job advances that marker in
the same transaction as the medallion write (a conditional UPDATE from the value it read), so two summaries
of one thread never fold the same messages in twice, and a failed summary leaves the marker where it was.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from checkpoints import medallion_schema as schema
from checkpoints.exceptions import NotFound, Unavailable, ValidationFailed
from checkpoints.llm import MedallionProvider, get_provider
from checkpoints.llm.findings import is_reference
from checkpoints.models import Job, Medallion, Message, Thread, Workspace
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.jobs import job_actor, job_submit
from checkpoints.services.medallion_store import StaleInput, Upsert, medallion_upsert

logger = logging.getLogger(__name__)

# Messages folded into one revision; a longer backlog becomes several revisions, oldest first.
MESSAGES_PER_REVISION = 500
# A message's text beyond this is cut in the evidence (tool outputs can be megabytes).
MESSAGE_MAX_CHARS = 4000
_FIRST_SENTENCE = re.compile(r"^(.{8,400}?[.!?])(?:\s|$)", re.DOTALL)
_CANDIDATES = re.compile(r"`([^`\n]{2,200})`|(https?://[^\s<>\"'`)\]]+)")


def medallion_active(workspace: Workspace, scope: schema.MedallionScope) -> Medallion | None:
    return Medallion.objects.for_workspace(workspace).active().filter(scope_key=scope.scope_key).first()


def thread_scope(thread: Thread) -> schema.MedallionScope:
    """The thread's medallion scope, normalised (an unusable stored value counts as no scope)."""
    raw = thread.scope if isinstance(thread.scope, dict) else {}
    try:
        return schema.MedallionScope.from_dict(
            {"graph_nodes": raw.get("graph_nodes") or [], "tags": raw.get("tags") or []}
        )
    except schema.SchemaError:
        return schema.MedallionScope()


def _pending_summary(thread: Thread) -> bool:
    return (
        Job.objects.for_workspace(thread.workspace)
        .filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING], kind=Job.Kind.SUMMARIZE)
        .filter(params__operation="thread", params__thread_id=thread.thread_id)
        .exists()
    )


def thread_summarize_submit(*, thread: Thread, actor: Actor) -> Job:
    """Queue a summary of the thread's new messages into the medallion of its scope.

    ValidationFailed (400) if the thread has no scope or no message since the last summary.
    """
    if thread_scope(thread).is_empty:
        raise ValidationFailed(
            f"Thread {thread.thread_id!r} has no scope; set one (PATCH threads/{{id}}/ with "
            '{"scope": {"graph_nodes": [...], "tags": [...]}}) before summarising it.',
            {"thread_id": thread.thread_id},
        )
    marker = Thread.objects.filter(pk=thread.pk).values_list("last_summarized_seq", flat=True).first()
    if marker is None:
        raise NotFound(f"Thread {thread.thread_id!r} not found.")
    if not Message.objects.filter(thread_id=thread.pk, seq__gt=marker).exists():
        raise ValidationFailed(
            f"Thread {thread.thread_id!r} has no new messages since the last summary.",
            {"thread_id": thread.thread_id, "last_summarized_seq": marker},
        )
    with transaction.atomic():
        job = job_submit(
            workspace=thread.workspace,
            kind=Job.Kind.SUMMARIZE,
            params={"operation": "thread", "thread_id": thread.thread_id},
            task="checkpoints.tasks.summarize_thread_job",
            actor=actor,
        )
        # Audited only once the job is really queued: if the broker refuses it, job_submit's on-commit hook
        # withdraws the job and raises, and Django runs no later hook.
        transaction.on_commit(
            lambda: audit_record(
                workspace=thread.workspace,
                actor=actor,
                action="thread.summarize",
                target_type="thread",
                target_id=thread.thread_id,
                details={"after_seq": marker, "job_id": str(job.job_id)},
            )
        )
    return job


def medallion_maybe_autosummarize(*, thread: Thread, workspace: Workspace | None = None) -> Job | None:
    """Call after messages were appended and committed: queue a summary when the workspace asks for one
    every N messages and N new ones have accumulated (and none is already queued or running).

    Best effort: the messages are stored whatever happens here; if the queue is down, the next append
    tries again (the backlog is still there). `workspace`: the thread's, as the caller has it (the
    request's, as current as its key): one that asks for no summaries costs no query.
    """
    if workspace is not None and not workspace.auto_summarize_every:
        return None
    # At most one query until a summary is due: this runs after every append.
    fresh = Thread.objects.filter(pk=thread.pk).select_related("workspace").first()
    every = fresh.workspace.auto_summarize_every if fresh is not None else None
    if fresh is None or not every or fresh.last_message_seq - fresh.last_summarized_seq < every:
        return None
    if thread_scope(fresh).is_empty or _pending_summary(fresh):
        return None
    try:
        return thread_summarize_submit(thread=fresh, actor=Actor.system("auto-summarize"))
    except (Unavailable, ValidationFailed) as exc:
        logger.warning("auto-summary of thread %s not queued: %s", fresh.thread_id, exc)
        return None


def _text(message: Message) -> str:
    text = message.content
    if not text and isinstance(message.content_blocks, list):
        text = " ".join(
            str(block.get("text", "")) for block in message.content_blocks if isinstance(block, dict)
        ).strip()
    return text


def _tool_names(message: Message) -> list[str]:
    names = []
    for call in message.tool_calls if isinstance(message.tool_calls, list) else []:
        if isinstance(call, dict):
            function = call.get("function")
            name = function.get("name") if isinstance(function, dict) else call.get("name")
            if isinstance(name, str) and name:
                names.append(name)
    return names


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = _FIRST_SENTENCE.match(text)
    return (match.group(1) if match else text)[:400]


def thread_evidence(thread: Thread, messages: Sequence[Message]) -> schema.Evidence:
    """Evidence from a run of messages: each one a transcript entry (`role (name): text`), the session
    summary from the task (first user message) and where it got to (last assistant message), and as
    artefacts the seq range, the tools called and the paths/commands/URLs the messages mention."""
    transcripts = []
    references: dict[str, None] = {}
    tools: Counter[str] = Counter()
    for message in messages:
        text = _text(message)
        called = _tool_names(message)
        tools.update(called)
        speaker = f"{message.role} ({message.name})" if message.name else message.role
        line = text[:MESSAGE_MAX_CHARS] + ("…" if len(text) > MESSAGE_MAX_CHARS else "")
        if called:
            line = f"{line} [calls {', '.join(called)}]".strip()
        if line:
            transcripts.append(f"{speaker}: {line}")
        for quoted, url in _CANDIDATES.findall(text):
            candidate = (quoted or url).strip().rstrip(".,")
            if is_reference(candidate):
                references[candidate] = None
    task = next((_text(m) for m in messages if m.role == Message.Role.USER and _text(m)), "")
    latest = next((_text(m) for m in reversed(messages) if m.role == Message.Role.ASSISTANT and _text(m)), "")
    parts = [
        f"Task: {_first_sentence(task)}" if task else "",
        f"Latest: {_first_sentence(latest)}" if latest else "",
    ]
    summary = " ".join(p for p in parts if p) or (
        f"Messages {messages[0].seq}-{messages[-1].seq} of thread {thread.thread_id}."
    )
    artefacts: dict[str, Any] = {
        "thread_id": thread.thread_id,
        "messages": {"from_seq": messages[0].seq, "to_seq": messages[-1].seq, "count": len(messages)},
    }
    if tools:
        artefacts["tools_called"] = [name for name, _ in tools.most_common(20)]
    if references:
        artefacts["references"] = list(references)[:50]
    return schema.Evidence(session_summary=summary, transcripts=transcripts, artefacts=artefacts)


def _advance_guard(thread: Thread, after: int, through: int) -> Any:
    def guard() -> None:
        # Conditional UPDATE: moves the marker only from the value the evidence was built after, and holds
        # the thread row until the medallion write commits.
        moved = Thread.objects.filter(pk=thread.pk, last_summarized_seq=after).update(
            last_summarized_seq=through
        )
        if moved != 1:
            raise StaleInput

    return guard


def _fold_next(
    job: Job, thread: Thread, scope: schema.MedallionScope, provider: MedallionProvider, target: int
) -> tuple[Upsert, int] | None:
    """Fold the next run of unsummarised messages (up to seq `target`) into the medallion; None when nothing
    is left. Returns the upsert and how many messages it folded in."""
    while True:
        after = Thread.objects.filter(pk=thread.pk).values_list("last_summarized_seq", flat=True).first()
        if after is None or after >= target:
            return None
        messages = list(
            Message.objects.filter(thread=thread, seq__gt=after, seq__lte=target).order_by("seq")[
                :MESSAGES_PER_REVISION
            ]
        )
        if not messages:
            # Deleted since: nothing to fold in, only the marker to move.
            Thread.objects.filter(pk=thread.pk, last_summarized_seq=after).update(last_summarized_seq=target)
            return None
        try:
            outcome = medallion_upsert(
                workspace=job.workspace,
                scope=scope,
                evidence=thread_evidence(thread, messages),
                provider=provider,
                actor_label=job_actor(job).label,
                job=job,
                source_thread=thread,
                window=(messages[0].created_at, messages[-1].created_at),
                guard=_advance_guard(thread, after, messages[-1].seq),
            )
        except StaleInput:
            continue  # another summary moved the marker: rebuild from where it is now
        return outcome, len(messages)


def medallion_summarize_thread(job: Job) -> dict[str, Any]:
    """Job handler of `thread_summarize_submit`: fold every message after the marker (as it stands when
    the job starts) into the thread-scope medallion, MESSAGES_PER_REVISION at a time."""
    thread = Thread.objects.filter(workspace=job.workspace, thread_id=job.params["thread_id"]).first()
    if thread is None:
        raise NotFound(f"Thread {job.params['thread_id']!r} was deleted before it could be summarised.")
    scope = thread_scope(thread)
    if scope.is_empty:
        raise ValidationFailed(f"Thread {thread.thread_id!r} no longer has a scope.")
    provider = get_provider()
    outcome: Upsert | None = None
    created = False
    folded = revisions = 0
    while (step := _fold_next(job, thread, scope, provider, thread.last_message_seq)) is not None:
        outcome, count = step
        created = created or outcome.created
        folded += count
        revisions += 1
    # Nothing left to fold (a redelivered job, or another summary did it): report the scope's medallion.
    medallion = outcome.medallion if outcome else medallion_active(job.workspace, scope)
    return {
        "medallion_id": str(medallion.medallion_id) if medallion else None,
        "version": medallion.version if medallion else None,
        "created": created,
        "thread_id": thread.thread_id,
        "messages_summarized": folded,
        "revisions": revisions,
        "summarized_through_seq": Thread.objects.filter(pk=thread.pk)
        .values_list("last_summarized_seq", flat=True)
        .first(),
    }
