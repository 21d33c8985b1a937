"""Logical and stored bytes on the thread page and the workspace overview, checked against sizes computed
from the stored rows (docs/storage.md): exact bytes in data attributes, human units and the saving in
the text."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.template.defaultfilters import filesizeformat
from django.test import Client
from django.urls import reverse

from checkpoints.models import Thread, Workspace
from tests.dashboard.test_query_counts import THREAD_PAGE_QUERIES
from tests.factories import make_checkpoint
from tests.storage.sizes import build_packed_thread, chat, expected_for_thread, expected_for_workspace

pytestmark = pytest.mark.django_db


def page_of(dash: Client, name: str, *args: str) -> str:
    cache.clear()  # the overview's totals are cached for a minute
    response = dash.get(reverse(name, args=args))
    assert response.status_code == 200
    return response.content.decode()


def reported(page: str) -> tuple[int, int]:
    """The exact (logical, stored) bytes the page's storage figure carries."""
    found = re.search(r'data-storage data-logical-bytes="(\d+)" data-stored-bytes="(\d+)"', page)
    assert found is not None
    return int(found.group(1)), int(found.group(2))


def test_the_thread_page_shows_stored_of_logical_bytes_and_the_saving(
    dash: Client, workspace: Workspace
) -> None:
    thread = build_packed_thread(workspace)
    expected = expected_for_thread(thread)
    page = page_of(dash, "dashboard:thread", workspace.slug, "t")
    assert reported(page) == (expected.logical, expected.stored)
    state = re.search(r'data-state-logical-bytes="(\d+)" data-state-stored-bytes="(\d+)"', page)
    assert state is not None
    assert (int(state.group(1)), int(state.group(2))) == (expected.state_logical, expected.state_stored)
    saved = round(100 * (expected.logical - expected.stored) / expected.logical)
    assert f"{filesizeformat(expected.stored)} stored of {filesizeformat(expected.logical)} logical" in page
    assert f"{saved}% saved · {expected.logical / expected.stored:.1f}\u00d7 smaller" in page
    assert f"({expected.parts} distinct parts," in page


def test_a_thread_of_small_documents_shows_no_saving(dash: Client, workspace: Workspace) -> None:
    make_checkpoint(workspace, "small", state={"a": "é"})
    expected = expected_for_thread(Thread.objects.get(thread_id="small"))
    page = page_of(dash, "dashboard:thread", workspace.slug, "small")
    assert reported(page) == (expected.logical, expected.stored) == (14, 14)
    assert "% saved" not in page and "distinct part" not in page


def test_the_overview_counts_every_part_of_the_workspace_once(
    dash: Client, workspace: Workspace, other_workspace: Workspace
) -> None:
    build_packed_thread(workspace)
    make_checkpoint(workspace, "again", state=chat(41))  # names the parts "t" stored already
    make_checkpoint(workspace, "small", state={"a": 1})
    make_checkpoint(other_workspace, "theirs", state=chat(45))
    expected = expected_for_workspace(workspace)
    page = page_of(dash, "dashboard:overview", workspace.slug)
    assert reported(page) == (expected.logical, expected.stored)
    assert expected.stored < 0.5 * expected.logical
    saved = round(100 * (expected.logical - expected.stored) / expected.logical)
    assert f'stat-value">{saved}%</span><span class="stat-label">Saved by packing (' in page


def test_the_overview_of_small_documents_shows_no_saving(dash: Client, workspace: Workspace) -> None:
    make_checkpoint(workspace, "small", state={"a": 1})
    expected = expected_for_workspace(workspace)
    page = page_of(dash, "dashboard:overview", workspace.slug)
    assert reported(page) == (expected.logical, expected.stored)
    assert expected.logical == expected.stored > 0
    assert "Saved by packing" not in page


def test_the_page_of_a_packed_thread_reads_its_headers_and_parts(
    dash: Client, workspace: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    build_packed_thread(workspace)
    url = reverse("dashboard:thread", args=[workspace.slug, "t"])
    dash.get(url)
    with django_assert_num_queries(THREAD_PAGE_QUERIES + 2):  # the packed rows' headers, the parts named
        dash.get(url)
