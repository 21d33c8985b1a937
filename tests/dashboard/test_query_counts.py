"""Query counts of the busiest pages and forms are pinned, and do not grow with the number of rows shown.
(The audit log's and its exports' are in tests/dashboard/test_audit_*.py, the overview's in
test_overview_charts.py, the retention preview's in test_retention_edit.py.)"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checkpoints.models import AuditEvent, Thread, Workspace
from checkpoints.services.annotations import annotation_create
from checkpoints.services.audit import Actor
from checkpoints.services.messages import messages_append
from checkpoints.services.threads import thread_fork
from tests.dashboard.test_timeline import TIMELINE_QUERIES
from tests.dashboard.world import World
from tests.factories import make_checkpoint, make_pending_write

pytestmark = pytest.mark.django_db

# session + user + workspace, then the page's own queries.
THREAD_LIST_QUERIES = 4
# With the sparkline of checkpoints over time, and what ran at each step of the tree (rows, writes).
THREAD_PAGE_QUERIES = 13 + 2 + 1  # and its findings
# The checkpoint and its thread, its lineage (the walk up the parent ids, then the rows), previous and next
# step, children, forks, the diff picker's checkpoints and the pending writes; what ran (rows, writes);
# the audit event of the view and its agent.
CHECKPOINT_PAGE_QUERIES = 3 + 9 + 2 + 2 + 1  # and its findings
# The checkpoint and the one it is compared with, each with its thread; the previous and next step pairs;
# the audit event of the view and its agent.
DIFF_PAGE_QUERIES = 3 + 2 + 2 + 2
SCOPE_FORM_QUERIES = 3 + 1  # the thread
# The thread, then in one transaction (a savepoint inside the test's): the thread locked, its scope and its
# updated_at written, the audit event.
SCOPE_SAVE_QUERIES = 3 + 1 + 6
RETENTION_FORM_QUERIES = 3  # the policy is the workspace's own fields
# In one transaction: the workspace locked, its policy written, the audit event with before and after.
RETENTION_SAVE_QUERIES = 3 + 5


def _threads(workspace: Workspace, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        make_checkpoint(workspace, f"t-{n:03d}", state={"n": n})
        messages_append(
            workspace=workspace, thread_id=f"t-{n:03d}", messages=[{"role": "user", "content": "hi"}]
        )
    Thread.objects.filter(workspace=workspace).update(tags=["a", "b"])


def test_it_pins_the_thread_list(
    dash: Client, workspace: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:threads", args=[workspace.slug])
    _threads(workspace, 5)
    with django_assert_num_queries(THREAD_LIST_QUERIES):
        small = dash.get(url, {"tag": "a"})
    _threads(workspace, 60, start=5)
    with django_assert_num_queries(THREAD_LIST_QUERIES):
        full = dash.get(url, {"tag": "a"})
    assert small.content.count(b'class="num">1<') == 5
    assert full.content.count(b'class="num">1<') == 50  # one page, with its message counts and heads


def test_it_pages_the_thread_list_without_offset_or_a_table_count(dash: Client, workspace: Workspace) -> None:
    _threads(workspace, 60)
    url = reverse("dashboard:threads", args=[workspace.slug])
    with CaptureQueriesContext(connection) as queries:
        page = dash.get(url).content.decode()
    nxt = page.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    with CaptureQueriesContext(connection) as second:
        dash.get(nxt)
    for sql in [q["sql"].upper() for q in [*queries.captured_queries, *second.captured_queries]]:
        assert " OFFSET " not in sql
        assert not sql.lstrip().startswith("SELECT COUNT(")  # per-row counts are subqueries of the page


def test_it_pins_the_thread_page(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:thread", args=[world.workspace.slug, "run-1"])
    with django_assert_num_queries(THREAD_PAGE_QUERIES):
        dash.get(url)
    for n in range(30):
        make_checkpoint(world.workspace, "run-1", namespace=f"ns-{n % 3}", state={"n": n})
    messages_append(
        workspace=world.workspace,
        thread_id="run-1",
        messages=[{"role": "user", "content": f"m{n}"} for n in range(80)],
    )
    with django_assert_num_queries(THREAD_PAGE_QUERIES):
        page = dash.get(url)
    assert page.content.count(b'<li class="tree-row') == 39


def _checkpoint_url(world: World, name: str, thread_id: str, checkpoint_id: str) -> str:
    return reverse(f"dashboard:{name}", args=[world.workspace.slug, thread_id, checkpoint_id]) + "?ns="


def test_it_pins_the_checkpoint_page_whatever_its_lineage_children_and_forks(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    with django_assert_num_queries(CHECKPOINT_PAGE_QUERIES):
        small = dash.get(_checkpoint_url(world, "checkpoint", "run-1", world.step2.checkpoint_id))
    assert small.content.count(b'<ol class="lineage">') == 1 and b'rel="next"' in small.content
    # A checkpoint 40 steps down a chain, with 5 children, 3 forks and 20 pending writes.
    chain = [
        make_checkpoint(world.workspace, "long", agent_id=f"agent-{n}", state={"n": n}) for n in range(40)
    ]
    middle = chain[-5]
    for n in range(5):
        make_checkpoint(world.workspace, "long", parent_id=middle.checkpoint_id, state={"child": n})
    thread = Thread.objects.get(workspace=world.workspace, thread_id="long")
    for n in range(3):
        thread_fork(
            source=thread, actor=Actor.system("t"), checkpoint=middle, namespace="", thread_id=f"f-{n}"
        )
    for n in range(20):
        make_pending_write(middle, n, task_id=f"task-{n}")
    with django_assert_num_queries(CHECKPOINT_PAGE_QUERIES):
        html = dash.get(_checkpoint_url(world, "checkpoint", "long", middle.checkpoint_id)).content.decode()
    assert html.count('<a href="/dashboard/w/acme/threads/f-') == 3
    assert "agent-0" in html and html.count("task-") >= 20
    assert "data-written-by" in html and 'rel="prev"' in html and 'rel="next"' in html


def test_it_pins_the_diff_whatever_the_number_of_changes(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    with django_assert_num_queries(DIFF_PAGE_QUERIES):
        small = dash.get(_checkpoint_url(world, "checkpoint-diff", "run-1", world.step2.checkpoint_id))
    assert b'<tr data-field="step_name">' in small.content
    before = make_checkpoint(world.workspace, "wide", state={f"k{n}": n for n in range(200)})
    after = make_checkpoint(
        world.workspace,
        "wide",
        agent_id="other",
        step_name="renamed",
        state={f"k{n}": -n for n in range(200)},
        metadata={f"m{n}": n for n in range(50)},
    )
    url = _checkpoint_url(world, "checkpoint-diff", "wide", after.checkpoint_id)
    with django_assert_num_queries(DIFF_PAGE_QUERIES):
        html = dash.get(url + f"&against={before.checkpoint_id}").content.decode()
    fields = re.findall(r'<tr data-field="(\w+)">', html)
    assert {"agent_id", "step_name", "metadata"} <= set(fields)
    assert "249 changes" in html  # 199 state values (k0 stays 0) and 50 metadata keys


def test_it_pins_the_scope_form_and_its_save(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:thread-scope", args=[world.workspace.slug, "run-1"])
    with django_assert_num_queries(SCOPE_FORM_QUERIES):
        assert b'name="graph_nodes"' in dash.get(url).content
    nodes = ", ".join(f"node-{n}" for n in range(50))
    with django_assert_num_queries(SCOPE_SAVE_QUERIES):
        saved = dash.post(url, {"graph_nodes": nodes, "tags": "a, b"})
    assert saved.status_code == 302
    assert len(Thread.objects.get(pk=world.thread.pk).scope["graph_nodes"]) == 50
    with django_assert_num_queries(SCOPE_FORM_QUERIES):
        assert b"node-49" in dash.get(url).content


def test_it_pins_the_retention_form_and_its_save(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:retention-edit", args=[world.workspace.slug])
    with django_assert_num_queries(RETENTION_FORM_QUERIES):
        assert b'name="keep_latest"' in dash.get(url).content
    off = {
        f"{rule}_{part}": ""
        for rule in ("default_ttl_seconds", "tombstone_retention_seconds")
        for part in (0, 1)
    }
    policy = {
        **off,
        "thread_idle_ttl_seconds_0": "2",
        "thread_idle_ttl_seconds_1": "days",
        "keep_latest": "3",
    }
    with django_assert_num_queries(RETENTION_SAVE_QUERIES):
        saved = dash.post(url, {**policy, "auto_summarize_every": ""})
    assert saved.status_code == 302
    assert AuditEvent.objects.get(action="retention.policy").details["after"]["keep_latest"] == 3


def test_it_pins_the_timeline_whatever_the_findings_of_its_checkpoints(
    dash: Client, workspace: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    checkpoints = [make_checkpoint(workspace, "audited", state={"n": n}) for n in range(12)]
    url = reverse("dashboard:thread-timeline", args=[workspace.slug, "audited"])
    with django_assert_num_queries(TIMELINE_QUERIES):
        dash.get(url)
    actor = Actor.system("auditor")
    for n, checkpoint in enumerate(checkpoints):
        for verdict in ("wrong", "correct")[: 1 + n % 2]:
            annotation_create(
                thread=checkpoint.thread, actor=actor, comment=f"c{n}", verdict=verdict, checkpoint=checkpoint
            )
    with django_assert_num_queries(TIMELINE_QUERIES):
        html = dash.get(url).content.decode()
    assert sorted(re.findall(r'data-findings="(\d+)"', html)) == ["1"] * 6 + ["2"] * 6
