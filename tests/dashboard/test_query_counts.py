"""Query counts of the busiest pages are pinned, and do not grow with the number of rows shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checkpoints.models import Thread, Workspace
from checkpoints.services.messages import messages_append
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

# session + user + workspace, then the page's own queries.
THREAD_LIST_QUERIES = 4
THREAD_PAGE_QUERIES = 13  # with the sparkline of checkpoints over time


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
