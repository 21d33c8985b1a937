"""A page of checkpoints read by its static statement is the page its queryset gives
(`checkpoints.storage.checkpoint_pages`): the same rows in the same order, the same fields loaded (and the
same deferred), the same threads, packed documents whole — for every scope and condition, both orders of
both orderings, from the start and from a cursor's position, on both backends."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from checkpoints.api.pagination import queryset_rows
from checkpoints.models import Checkpoint, PendingWrite, Thread, Workspace
from checkpoints.storage.checkpoint_pages import CheckpointPages, pending_writes_of
from checkpoints.storage.keyset import Seek
from tests.factories import WorkspaceFactory, make_checkpoint, make_pending_write

pytestmark = pytest.mark.django_db

LARGE = {"messages": [{"role": "user", "content": f"{n} " + "word " * 60} for n in range(40)]}
LANGGRAPH = Checkpoint.Framework.LANGGRAPH


@pytest.fixture
def history(workspace: Workspace) -> dict[str, Any]:
    """Two threads of the workspace, and a thread of the same id in another workspace: root and "sub"
    namespaces, LangGraph checkpoints among others, a packed state, a checkpoint past its expiry (unswept),
    one pinned past its expiry, a tombstone, and pending writes."""
    other = WorkspaceFactory.create(slug="elsewhere")
    made: list[Checkpoint] = []
    for n in range(4):
        made.append(make_checkpoint(workspace, "t1", checkpoint_id=f"1f0-{n}", framework=LANGGRAPH))
        made.append(make_checkpoint(workspace, "t1", namespace="sub", checkpoint_id=f"1f0-{n}"))
        made.append(make_checkpoint(workspace, "t2", checkpoint_id=f"2-{n}", framework=LANGGRAPH))
        made.append(make_checkpoint(other, "t1", checkpoint_id=f"1f0-{n}", framework=LANGGRAPH))
    made.append(
        make_checkpoint(workspace, "t1", checkpoint_id="1f0-packed", state=LARGE, framework=LANGGRAPH)
    )
    for checkpoint in made[4:12]:
        make_pending_write(checkpoint, {"n": checkpoint.pk}, task_id="b")
        make_pending_write(checkpoint, checkpoint.checkpoint_id, channel="d", task_id="a")
    past = timezone.now() - timedelta(hours=1)
    Checkpoint.objects.filter(pk=made[0].pk).update(expires_at=past)
    Checkpoint.objects.filter(pk=made[4].pk).update(expires_at=past, pinned=True)
    Checkpoint.objects.filter(pk=made[8].pk).update(expired_at=past)
    return {"thread": Thread.objects.get(workspace=workspace, thread_id="t1"), "now": timezone.now()}


CONDITIONS: list[dict[str, Any]] = [
    {},
    {"live": None},
    {"live": None, "namespace": ""},
    {"namespace": "sub"},
    {"live": None, "framework": LANGGRAPH, "namespace": ""},
    {"live": None, "framework": LANGGRAPH, "checkpoint_id": "1f0-2"},
    {"framework": LANGGRAPH, "below_checkpoint_id": "1f0-2"},
    {"below_row": None},
]
SCOPES = ["thread", "thread_id", "missing thread_id", "workspace"]
ORDERINGS = [["-id"], ["id"], ["-checkpoint_id", "-id"], ["checkpoint_id", "id"]]


def _pages(
    workspace: Workspace, history: dict[str, Any], scope: str, conditions: dict[str, Any], payload: bool
) -> CheckpointPages:
    values = dict(conditions)
    if "live" in values:
        values["live"] = history["now"]
    if "below_row" in values:
        values["below_row"] = Checkpoint.objects.get(
            thread=history["thread"], namespace="", checkpoint_id="1f0-3"
        ).pk
    where: dict[str, Any] = {
        "thread": {"thread": history["thread"]},
        "thread_id": {"thread_id": "t1"},
        "missing thread_id": {"thread_id": "nowhere"},
        "workspace": {},
    }[scope]
    return CheckpointPages(workspace, values, payload=payload, **where)


def _seen(checkpoint: Checkpoint) -> tuple[Any, ...]:
    """What a page's representation can read of a checkpoint: every loaded field (a deferred one as
    such), its thread and the parts it could not find."""
    fields = {
        f.attname: checkpoint.__dict__.get(f.attname, "<deferred>") for f in Checkpoint._meta.concrete_fields
    }
    thread = checkpoint.thread
    return fields, thread.pk, thread.thread_id, thread.workspace_id, checkpoint.missing_parts


@pytest.mark.parametrize("payload", [False, True], ids=["without payload", "with payload"])
@pytest.mark.parametrize("scope", SCOPES)
def test_a_static_page_is_its_querysets_page(
    workspace: Workspace, history: dict[str, Any], scope: str, payload: bool
) -> None:
    compared = 0
    for conditions, ordering, limit in itertools.product(CONDITIONS, ORDERINGS, [2, 100]):
        pages = _pages(workspace, history, scope, conditions, payload)
        everything = queryset_rows(pages.queryset(), Seek(ordering, None, 1000))
        middle = everything[len(everything) // 2] if everything else None
        positions = [None] + ([[getattr(middle, name.lstrip("-")) for name in ordering]] if middle else [])
        for position in positions:
            seek = Seek(ordering, position, limit)
            expected = [_seen(c) for c in queryset_rows(pages.queryset(), seek)]
            assert [_seen(c) for c in pages.read(seek)] == expected, (conditions, ordering, position)
            compared += len(expected)
    # The cases hold rows to compare; another workspace's thread of that id is not the missing one's.
    assert compared == 0 if scope == "missing thread_id" else compared > 100


def test_a_static_page_holds_packed_documents_whole(workspace: Workspace, history: dict[str, Any]) -> None:
    pages = CheckpointPages(workspace, {"checkpoint_id": "1f0-packed"}, payload=True, thread_id="t1")
    (checkpoint,) = pages.read(Seek(["-id"], None, 5))
    stored = Checkpoint.objects.filter(pk=checkpoint.pk).values_list("state", flat=True).get()
    assert stored is not None and stored.startswith("#")  # packed: the row holds references to its parts
    assert checkpoint.state is not None and json.loads(checkpoint.state) == LARGE
    assert checkpoint.missing_parts == ()


def test_a_page_without_payload_leaves_the_documents_deferred(
    workspace: Workspace, history: dict[str, Any]
) -> None:
    (checkpoint,) = CheckpointPages(
        workspace, {"checkpoint_id": "1f0-1", "namespace": "sub"}, payload=False, thread_id="t1"
    ).read(Seek(["-id"], None, 5))
    assert checkpoint.get_deferred_fields() == {"state", "context", "metadata"}


def test_pending_writes_of_a_page_come_in_langgraphs_order(
    workspace: Workspace, history: dict[str, Any]
) -> None:
    pages = CheckpointPages(workspace, {"namespace": "sub"}, payload=False, thread=history["thread"])
    page = pages.read(Seek(["-id"], None, 100))
    writes = pending_writes_of(page)
    assert set(writes) == {(c.thread_id, c.namespace, c.checkpoint_id) for c in page}
    for checkpoint in page:
        listed = writes[(checkpoint.thread_id, checkpoint.namespace, checkpoint.checkpoint_id)]
        stored = PendingWrite.objects.filter(
            thread=checkpoint.thread, namespace="sub", checkpoint_id=checkpoint.checkpoint_id
        ).order_by("task_path", "task_id", "idx")
        expected = [("a", "d"), ("b", "c")] if checkpoint.checkpoint_id in ("1f0-1", "1f0-2") else []
        assert [(w.task_id, w.channel) for w in listed] == expected
        assert [vars(w) | {"_state": None} for w in listed] == [vars(w) | {"_state": None} for w in stored]
    assert pending_writes_of([]) == {}
