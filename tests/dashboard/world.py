"""A small, realistic workspace for dashboard, admin and browser tests, built through the real services:
a thread with a branch, a handoff, a tombstone, a pinned checkpoint, a second namespace, messages, a fork,
a medallion with two revisions, jobs and audit events."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User

from checkpoints.models import Checkpoint, Job, Medallion, Membership, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire, checkpoint_handoff, checkpoint_set_ttl
from checkpoints.services.medallions import medallion_create, medallion_update
from checkpoints.services.messages import messages_append
from checkpoints.services.threads import thread_fork
from tests.factories import make_checkpoint

PASSWORD = "correct horse battery staple"


def make_user(
    username: str, *, staff: bool = True, superuser: bool = False, workspaces: tuple[Workspace, ...] = ()
) -> User:
    user = User.objects.create_user(
        username, password=PASSWORD, is_staff=staff or superuser, is_superuser=superuser
    )
    for workspace in workspaces:
        Membership.objects.create(workspace=workspace, user=user)
    return user


@dataclass
class World:
    workspace: Workspace
    thread: Thread
    root: Checkpoint
    step1: Checkpoint
    step2: Checkpoint
    branch: Checkpoint
    handoff: Checkpoint
    tombstone: Checkpoint
    pinned: Checkpoint
    tool: Checkpoint
    fork: Thread
    medallion: Medallion


def build_world(workspace: Workspace) -> World:
    actor = Actor.system("test")
    thread_id = "run-1"
    messages_append(
        workspace=workspace,
        thread_id=thread_id,
        messages=[
            {"role": "user", "content": "Plan the refactor of the billing service."},
            {"role": "assistant", "content": "We decided to split invoices from payments."},
        ],
    )
    root = make_checkpoint(
        workspace,
        thread_id,
        agent_id="planner",
        step_name="plan",
        state={"goal": "refactor billing", "todo": ["split", "test"], "done": []},
        metadata={"source": "input"},
    )
    step1 = make_checkpoint(
        workspace,
        thread_id,
        agent_id="planner",
        step_name="split",
        state={"goal": "refactor billing", "todo": ["test"], "done": ["split"]},
    )
    messages_append(
        workspace=workspace, thread_id=thread_id, messages=[{"role": "tool", "content": "pytest: 42 passed"}]
    )
    step2 = make_checkpoint(
        workspace,
        thread_id,
        agent_id="planner",
        step_name="test",
        state={"goal": "refactor billing", "todo": [], "done": ["split", "test"], "score": 0.93},
    )
    branch = make_checkpoint(
        workspace,
        thread_id,
        agent_id="planner",
        step_name="retry",
        parent_id=root.checkpoint_id,
        state={"goal": "refactor billing", "todo": ["rewrite"], "done": []},
    )
    handoff = checkpoint_handoff(source=step2, target_agent_id="reviewer", actor=actor)
    tombstone = make_checkpoint(workspace, thread_id, agent_id="reviewer", state={"draft": True})
    checkpoint_expire(checkpoint=tombstone, actor=actor)
    tombstone.refresh_from_db()
    pinned = make_checkpoint(
        workspace, thread_id, agent_id="reviewer", state={"approved": True}, ttl_seconds=3600
    )
    checkpoint_set_ttl(checkpoint=pinned, actor=actor, pinned=True)
    pinned.refresh_from_db()
    make_checkpoint(workspace, thread_id, namespace="tools", agent_id="search", state={"query": "billing"})
    tool = make_checkpoint(workspace, thread_id, namespace="tools", agent_id="search", state={"hits": 3})
    thread = Thread.objects.get(workspace=workspace, thread_id=thread_id)
    fork = thread_fork(source=thread, actor=actor, checkpoint=step1, namespace="", thread_id="run-1-fork")
    medallion = medallion_create(
        workspace=workspace,
        actor=actor,
        document={
            "scope": {"graph_nodes": ["billing"], "tags": ["refactor"]},
            "summary": {
                "high_level": "Billing refactor started.",
                "subsystems": [
                    {"name": "billing/invoices", "status": "in_progress", "notes": "being split out"}
                ],
            },
            "decisions": [
                {
                    "id": "D-1",
                    "statement": "Split invoices from payments.",
                    "rationale": "They change at different rates.",
                    "confidence": 0.9,
                }
            ],
            "open_questions": [
                {
                    "id": "Q-1",
                    "question": "Which rounding mode do invoices use?",
                    "blocked_on": ["finance"],
                    "priority": "high",
                }
            ],
            "affordances": {
                "recommended_entry_points": ["billing/invoices.py"],
                "avoid_repeating": ["re-running the full data migration"],
                "invariants": None,
            },
            "meta": {"model": "cairn-extractive-1", "source_thread_id": thread_id},
        },
    )
    medallion = medallion_update(
        medallion=medallion,
        actor=actor,
        changes={
            "summary": {
                "high_level": "Billing is being split into invoices and payments.",
                "subsystems": [{"name": "billing/invoices", "status": "stable", "notes": "split out"}],
            },
            "open_questions": [],
        },
    )
    Job.objects.create(
        workspace=workspace,
        kind=Job.Kind.SUMMARIZE,
        status=Job.Status.FAILED,
        params={"thread_id": thread_id},
        error="LLMError: the model returned invalid JSON",
    )
    for checkpoint in (root, step1, step2, branch, handoff, pinned, tool):
        checkpoint.refresh_from_db()
    return World(
        workspace, thread, root, step1, step2, branch, handoff, tombstone, pinned, tool, fork, medallion
    )
