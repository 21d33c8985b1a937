"""The diff an auditor reads: LangGraph's bookkeeping hidden behind a link, no rows that change nothing,
changed values side by side, and the previous / next step pair one click away."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.dashboard.diffview import is_langgraph_bookkeeping, side_by_side
from checkpoints.models import Workspace
from tests.dashboard.refund_run import build_refund_run
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def _diff_url(workspace: Workspace, thread_id: str, checkpoint_id: str) -> str:
    return reverse("dashboard:checkpoint-diff", args=[workspace.slug, thread_id, checkpoint_id]) + "?ns="


def _paths(html: str) -> list[str]:
    return re.findall(r'<td class="diff-path"><code>([^<]*)</code>', html)


def test_it_leaves_out_operations_that_change_nothing() -> None:
    patch: list[dict[str, Any]] = [
        {"op": "move", "from": "/a", "path": "/b"},
        {"op": "replace", "path": "/c", "value": 1},
        {"op": "replace", "path": "/d", "value": 2},
    ]
    diff = side_by_side({"a": None, "b": None, "c": 1, "d": 1}, patch)
    assert [(row.op, row.path) for row in diff.rows] == [("replace", "/d")]
    assert (diff.unchanged, diff.hidden, diff.truncated) == (2, 0, False)


def test_it_knows_langgraph_bookkeeping_paths() -> None:
    assert is_langgraph_bookkeeping("/state/channel_versions/messages")
    assert is_langgraph_bookkeeping("/state/ts")
    assert is_langgraph_bookkeeping("/metadata/step")
    assert not is_langgraph_bookkeeping("/state/channel_values/refund")
    assert not is_langgraph_bookkeeping("/context/ts")


def test_it_hides_langgraph_bookkeeping_until_asked(dash: Client, workspace: Workspace) -> None:
    run = build_refund_run(workspace)
    url = _diff_url(workspace, "refund-run", run.answered.checkpoint_id)
    html = dash.get(url).content.decode()
    assert _paths(html) == ["/state/channel_values/messages/1"]
    assert "Refunding 500 EUR" in html
    omitted = re.search(r"data-diff-omitted>(.*?)</p>", html, re.S)
    assert omitted is not None and "2 changes to LangGraph's bookkeeping hidden." in omitted.group(1)
    toggle = re.search(r'href="\?([^"]+)" data-bookkeeping-toggle>Show', html)
    assert toggle is not None
    shown = dash.get(f"{url.split('?')[0]}?{toggle.group(1).replace('&amp;', '&')}").content.decode()
    assert sorted(_paths(shown)) == ["/metadata/step", "/state/channel_values/messages/1", "/state/ts"]
    assert "data-bookkeeping-toggle>Hide" in shown


def test_it_keeps_every_path_of_other_frameworks(dash: Client, workspace: Workspace) -> None:
    make_checkpoint(workspace, "plain", state={"ts": 1, "v": 1})
    second = make_checkpoint(workspace, "plain", state={"ts": 2, "v": 1})
    html = dash.get(_diff_url(workspace, "plain", second.checkpoint_id)).content.decode()
    assert _paths(html) == ["/state/ts"]
    assert "data-bookkeeping-toggle" not in html


def test_it_links_the_previous_and_next_step_pairs(dash: Client, workspace: Workspace) -> None:
    run = build_refund_run(workspace)
    html = dash.get(_diff_url(workspace, "refund-run", run.asked.checkpoint_id)).content.decode()
    previous = re.search(r'data-previous-pair href="([^"]+)"', html)
    following = re.search(r'data-next-pair href="([^"]+)"', html)
    assert previous is not None and run.start.checkpoint_id in previous.group(1)
    assert following is not None and run.answered.checkpoint_id in following.group(1)
    first = dash.get(_diff_url(workspace, "refund-run", run.start.checkpoint_id)).content.decode()
    assert "data-previous-pair" not in first and "No earlier pair" in first
