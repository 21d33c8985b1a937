"""On PostgreSQL the new dashboard pages read through indexes, never a scan of the checkpoint or message
table: the queries the pages run are EXPLAINed over tens of thousands of analysed rows in several
workspaces."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from checkpoints.dashboard.agents import HandoffFilterForm, handoffs_for_list
from checkpoints.dashboard.forms import ThreadFilterForm
from checkpoints.dashboard.search import SearchForm
from checkpoints.models import Checkpoint, Message, Thread, Workspace
from checkpoints.services.search import message_search_text
from tests.dashboard.plans import plan_nodes, threads_in_three_workspaces

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

WORDS = ("plan", "build", "test", "review", "deploy", "report", "search", "summarise")


@pytest.fixture
def loaded(workspace: Workspace) -> Workspace:
    """Three workspaces of 40 threads, each thread 120 checkpoints and 120 messages (about 14,000 of each)."""
    now = timezone.now()
    checkpoints: list[Checkpoint] = []
    messages: list[Message] = []
    for t, thread in threads_in_three_workspaces(workspace, 40):
        for n in range(120):
            word = WORDS[(n + t) % len(WORDS)]
            checkpoints.append(
                Checkpoint(
                    workspace=thread.workspace, thread=thread, checkpoint_id=f"c-{n}",
                    agent_id=f"agent-{n % 9}", step_index=n, step_name=f"{word} step {n}", state="{}",
                    context="{}", metadata=json.dumps({"k": n % 10}), message_seq=n + 1, checksum="x" * 64,
                    handoff_target=f"agent-{n % 4}" if n % 30 == 0 else None,
                    handoff_from="agent-8" if n % 30 == 0 else None, created_at=now,
                )
            )  # fmt: skip
            content = f"{word} number {n} of thread {t}, ticket ZX{t:02d}Q{n:03d}"
            messages.append(
                Message(
                    thread=thread, seq=n + 1, message_id=f"m-{n}", role="user", content=content,
                    search_text=message_search_text(content, None),
                )
            )  # fmt: skip
    Checkpoint.objects.bulk_create(checkpoints, batch_size=2000)
    Message.objects.bulk_create(messages, batch_size=2000)
    with connection.cursor() as cursor:
        for model in (Checkpoint, Message, Thread):
            cursor.execute(f"ANALYZE {model._meta.db_table}")
    return workspace


def _plan(queryset: QuerySet[Any]) -> str:
    return json.dumps(json.loads(queryset.explain(format="json")))


def _assert_indexed(plan: str, *indexes: str) -> None:
    for index in indexes:
        assert index in plan, plan
    for table in (Checkpoint._meta.db_table, Message._meta.db_table):
        assert not any(
            node.get("Node Type") == "Seq Scan" and node.get("Relation Name") == table
            for node in plan_nodes(json.loads(plan))
        ), plan


def _search(workspace: Workspace, **data: str) -> SearchForm:
    form = SearchForm(data=data)
    assert form.is_valid(), form.errors
    return form


def test_message_search_uses_the_trigram_index(loaded: Workspace) -> None:
    messages = _search(loaded, q="ticket zx03q117").messages(loaded)
    assert messages is not None
    with connection.cursor() as cursor:
        # Every message holds "ticket", so at this size the planner may prefer a scan to a trigram bitmap
        # that filters little (it did, under load); forbid it to see which index the query can use, as the
        # API's search test does.
        cursor.execute("SET LOCAL enable_seqscan = off")
    _assert_indexed(_plan(messages.order_by("-id")[:51]), "message_search_trgm")


def test_checkpoint_search_by_step_name_uses_its_trigram_index(loaded: Workspace) -> None:
    checkpoints = _search(loaded, kind="checkpoints", q="step 117").checkpoints(loaded)
    _assert_indexed(_plan(checkpoints.order_by("-id")[:51]), "checkpoint_step_name_trgm")


def test_checkpoint_search_by_agent_and_metadata_uses_their_indexes(loaded: Workspace) -> None:
    by_agent = _search(loaded, kind="checkpoints", agent="agent-3").checkpoints(loaded)
    _assert_indexed(_plan(by_agent.order_by("-id")[:51]), "checkpoint_ws_agent")
    by_metadata = _search(loaded, kind="checkpoints", metadata='{"k": 7, "x": 1}').checkpoints(loaded)
    _assert_indexed(_plan(by_metadata.order_by("-id")[:51]), "checkpoint_metadata_gin")


def test_handoffs_by_target_use_the_inbox_index(loaded: Workspace) -> None:
    form = HandoffFilterForm(data={"to_agent": "agent-2"})
    assert form.is_valid()
    _assert_indexed(
        _plan(form.apply(handoffs_for_list(loaded), loaded).order_by("-id")[:51]), "checkpoint_ws_inbox"
    )
    anyone = HandoffFilterForm(data={"agent": "agent-8", "status": "pending"})
    assert anyone.is_valid()
    _assert_indexed(
        _plan(anyone.apply(handoffs_for_list(loaded), loaded).order_by("-id")[:51]), "checkpoint_ws_inbox"
    )


def test_the_thread_list_agent_filter_uses_the_agent_index(loaded: Workspace) -> None:
    form = ThreadFilterForm(data={"agent": "agent-5"})
    assert form.is_valid()
    threads = form.apply(Thread.objects.for_workspace(loaded)).order_by(*form.keyset())[:51]
    _assert_indexed(_plan(threads), "checkpoint_ws_agent")


def test_a_timeline_page_seeks_both_streams(loaded: Workspace) -> None:
    thread = Thread.objects.get(workspace=loaded, thread_id="t-3")
    messages = Message.objects.filter(thread=thread, seq__gt=60).order_by("seq")[:51]
    checkpoints = Checkpoint.objects.filter(thread=thread, pk__gt=0).without_payload().order_by("id")[:51]
    _assert_indexed(_plan(messages), "message_unique_seq")
    _assert_indexed(_plan(checkpoints), "checkpoint_thread_timeline")
