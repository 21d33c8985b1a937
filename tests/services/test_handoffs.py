"""The handoff rule (checkpoints.services.handoffs): taken once the target agent writes on the thread after
it, whatever the client and whatever the parent of what it writes; pending until then."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.models import Checkpoint, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_handoff
from checkpoints.services.handoffs import PENDING, TAKEN, handoffs_with_status, with_takeover
from checkpoints.services.messages import messages_append
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def _statuses(workspace: Workspace) -> dict[str, list[str]]:
    everything = Checkpoint.objects.for_workspace(workspace)
    return {
        status: sorted(c.thread.thread_id for c in handoffs_with_status(everything, status))
        for status in (PENDING, TAKEN)
    }


def _hand(workspace: Workspace, thread_id: str, target: str) -> Checkpoint:
    source = make_checkpoint(workspace, thread_id, agent_id="planner", checkpoint_id=f"{thread_id}-src")
    return checkpoint_handoff(source=source, target_agent_id=target, actor=Actor.system("test"))


def test_it_counts_a_later_checkpoint_of_the_target_whatever_its_parent_or_namespace(
    workspace: Workspace,
) -> None:
    _hand(workspace, "graph", "writer")
    _hand(workspace, "subgraph", "writer")
    _hand(workspace, "untouched", "writer")
    assert _statuses(workspace) == {PENDING: ["graph", "subgraph", "untouched"], TAKEN: []}
    # LangGraph's saver continues from its own previous checkpoint, not from the handoff.
    make_checkpoint(workspace, "graph", agent_id="writer", parent_id="graph-src")
    make_checkpoint(workspace, "subgraph", agent_id="writer", namespace="tools:1", parent_id=None)
    assert _statuses(workspace) == {PENDING: ["untouched"], TAKEN: ["graph", "subgraph"]}


def _say(workspace: Workspace, name: str) -> None:
    message = {"role": "assistant", "content": "done", "name": name}
    messages_append(workspace=workspace, thread_id="chat", messages=[message])


def test_it_counts_a_message_the_target_sent_after_it(workspace: Workspace) -> None:
    _hand(workspace, "chat", "writer")
    messages_append(workspace=workspace, thread_id="chat", messages=[{"role": "user", "content": "hi"}])
    _say(workspace, "editor")
    assert _statuses(workspace) == {PENDING: ["chat"], TAKEN: []}
    _say(workspace, "writer")
    assert _statuses(workspace) == {PENDING: [], TAKEN: ["chat"]}
    handoff: Any = with_takeover(handoffs_with_status(Checkpoint.objects.for_workspace(workspace))).get()
    assert (handoff.taken_message_seq, handoff.taken_checkpoint_id) == (3, None)


def test_writes_before_the_handoff_or_by_another_agent_or_on_another_thread_leave_it_pending(
    workspace: Workspace, other_workspace: Workspace
) -> None:
    make_checkpoint(workspace, "run", agent_id="writer", checkpoint_id="early")
    handoff = _hand(workspace, "run", "writer")
    make_checkpoint(workspace, "run", agent_id="reviewer")
    make_checkpoint(workspace, "elsewhere", agent_id="writer")
    make_checkpoint(other_workspace, "run", agent_id="writer")
    assert _statuses(workspace) == {PENDING: ["run"], TAKEN: []}
    later = make_checkpoint(workspace, "run", agent_id="writer")
    taken: Any = with_takeover(handoffs_with_status(Checkpoint.objects.for_workspace(workspace), TAKEN)).get()
    assert taken.pk == handoff.pk and taken.taken_checkpoint_id == later.checkpoint_id
    assert taken.taken_checkpoint_at == later.created_at
