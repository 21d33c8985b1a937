"""One run timeline per thread: messages and checkpoints interleaved in the order they happened, each message
tied to the checkpoint saved after it, subgraph checkpoints attached to the step that spawned them, keyset
pages both ways; previous / next step on the checkpoint page."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.models import Checkpoint, Workspace
from checkpoints.services.messages import messages_append
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

# session + user + workspace, the thread, then one query for messages and one for checkpoints, then what ran
# (the checkpoints' metadata, their writes), and the findings of its checkpoints (the badges).
TIMELINE_QUERIES = 6 + 2 + 1


def _url(workspace: Workspace, thread_id: str) -> str:
    return reverse("dashboard:thread-timeline", args=[workspace.slug, thread_id])


def _entries(html: str) -> list[str]:
    """The timeline in page order: "m<seq>" for a message, the checkpoint id for a checkpoint."""
    found = re.findall(
        r'<li class="tl-entry [^"]*" id="(m-\d+|c-\d+)">.*?(?=<li class="tl-entry|</ol>)', html, re.S
    )
    ids = {f"c-{c.pk}": c.checkpoint_id for c in Checkpoint.objects.all()}
    return [f"m{anchor[2:]}" if anchor.startswith("m-") else ids[anchor] for anchor in found]


def _say(workspace: Workspace, thread_id: str, *contents: str) -> None:
    messages_append(
        workspace=workspace, thread_id=thread_id, messages=[{"role": "user", "content": c} for c in contents]
    )


def _href(html: str, pattern: str) -> str | None:
    """The href `pattern` captures (its first group) in `html`, unescaped; None without a match."""
    found = re.search(pattern, html)
    return found.group(1).replace("&amp;", "&") if found else None


def _link(html: str, rel: str) -> str | None:
    return _href(html, rf'<a class="btn" href="([^"]+)" rel="{rel}">')


def test_it_interleaves_messages_and_checkpoints_in_the_order_they_happened(
    dash: Client, world: World
) -> None:
    html = dash.get(_url(world.workspace, world.thread.thread_id)).content.decode()
    w = world
    assert _entries(html) == [
        "m1", "m2", w.root.checkpoint_id, w.step1.checkpoint_id,
        "m3", w.step2.checkpoint_id, w.branch.checkpoint_id, w.handoff.checkpoint_id,
        w.tombstone.checkpoint_id, w.pinned.checkpoint_id,
        Checkpoint.objects.get(thread=w.thread, namespace="tools", step_index=0).checkpoint_id,
        w.tool.checkpoint_id,
    ]  # fmt: skip
    # Each message links to the checkpoint saved after it.
    followed = re.findall(r'id="m-(\d+)">.*?data-followed-by="([^"]+)"', html, re.S)
    assert followed == [
        ("1", w.root.checkpoint_id),
        ("2", w.root.checkpoint_id),
        ("3", w.step2.checkpoint_id),
    ]
    # The "tools" subgraph hangs under the root step saved just before it, indented.
    assert re.findall(r'data-spawned-by="([^"]+)"', html) == [w.pinned.checkpoint_id] * 2
    assert html.count("tl-depth-1") == 2
    assert "handoff planner → reviewer" in html and "tombstone" in html


def test_it_says_when_no_checkpoint_followed_a_message_yet(dash: Client, world: World) -> None:
    _say(world.workspace, world.thread.thread_id, "still waiting")
    html = dash.get(_url(world.workspace, world.thread.thread_id)).content.decode()
    assert _entries(html)[-1] == "m4"
    assert html.split('id="m-4"')[1].count("no checkpoint after it yet") == 1


def test_it_attaches_nested_subgraphs_to_the_step_that_spawned_them(
    dash: Client, workspace: Workspace
) -> None:
    outer = make_checkpoint(workspace, "run", agent_id="graph", step_name="route")
    make_checkpoint(workspace, "run", namespace="child:1", agent_id="child", step_name="inner")
    make_checkpoint(workspace, "run", namespace="child:1|grand:2", agent_id="grand", step_name="deep")
    later = make_checkpoint(workspace, "run", agent_id="graph", step_name="finish")
    child_step = Checkpoint.objects.get(namespace="child:1")
    html = dash.get(_url(workspace, "run")).content.decode()
    assert re.findall(r'data-spawned-by="([^"]+)"', html) == [outer.checkpoint_id, child_step.checkpoint_id]
    assert "tl-depth-2" in html and _entries(html)[-1] == later.checkpoint_id


def test_it_pages_a_long_thread_both_ways_showing_everything_once(
    dash: Client, workspace: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    expected: list[str] = []
    for n in range(40):
        _say(workspace, "long", f"q{n}", f"a{n}")
        expected += [f"m{2 * n + 1}", f"m{2 * n + 2}"]
        expected.append(make_checkpoint(workspace, "long", agent_id="bot", step_name=f"s{n}").checkpoint_id)
    url = _url(workspace, "long")
    pages: list[list[str]] = []
    next_url: str | None = url
    while next_url:
        with django_assert_num_queries(TIMELINE_QUERIES):
            html = dash.get(next_url).content.decode()
        pages.append(_entries(html))
        next_url = _link(html, "next")
    assert [len(p) for p in pages] == [50, 50, 20]
    assert [e for p in pages for e in p] == expected
    # Walking back from the last page gives the same pages.
    back = _link(html, "prev")
    assert back is not None and _entries(dash.get(back).content.decode()) == pages[1]
    latest = dash.get(url, {"cursor": re.search(r'href="\?cursor=([^"]+)">Latest', html).group(1)})  # type: ignore[union-attr]
    assert _entries(latest.content.decode()) == expected[-50:]
    assert _link(latest.content.decode(), "next") is None


def test_it_opens_at_a_message_or_a_checkpoint(dash: Client, workspace: Workspace) -> None:
    ids = []
    for n in range(60):
        _say(workspace, "long", f"m{n}")
        ids.append(make_checkpoint(workspace, "long", agent_id="bot").checkpoint_id)
    at_message = dash.get(_url(workspace, "long"), {"message": "31"}).content.decode()
    assert _entries(at_message)[:3] == ["m31", ids[30], "m32"]
    assert 'class="tl-entry tl-message msg msg-user tl-anchor" id="m-31"' in at_message
    at_checkpoint = dash.get(_url(workspace, "long"), {"checkpoint": ids[40]}).content.decode()
    assert _entries(at_checkpoint)[:2] == [ids[40], "m42"]
    previous = dash.get(_link(at_checkpoint, "prev")).content.decode()  # type: ignore[arg-type]
    assert _entries(previous)[-2:] == [ids[39], "m41"] and len(_entries(previous)) == 50


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ({"cursor": "garbage"}, 400),
        ({"cursor": "YTotMTox"}, 400),  # "a:-1:1"
        ({"message": "0"}, 400),
        ({"message": "1e9"}, 400),
        ({"checkpoint": "bad id!"}, 400),
        ({"checkpoint": "no-such-checkpoint"}, 404),
    ],
)
def test_it_refuses_bad_positions_with_a_4xx(
    dash: Client, world: World, query: dict[str, str], status: int
) -> None:
    response = dash.get(_url(world.workspace, world.thread.thread_id), query)
    assert response.status_code == status and b"Something needs your attention" in response.content


def _step(html: str, rel: str) -> str | None:
    return _href(html, rf'<a class="btn" rel="{rel}" href="([^"]+)">')


def test_the_checkpoint_page_steps_to_the_previous_and_next_step_of_its_namespace(
    dash: Client, world: World
) -> None:
    def page(checkpoint: Checkpoint) -> str:
        url = reverse(
            "dashboard:checkpoint",
            args=[world.workspace.slug, world.thread.thread_id, checkpoint.checkpoint_id],
        )
        return dash.get(url, {"ns": checkpoint.namespace}).content.decode()

    step1 = page(world.step1)
    assert f"{world.root.checkpoint_id}/?ns=" in _step(step1, "prev")  # type: ignore[operator]
    assert f"{world.step2.checkpoint_id}/?ns=" in _step(step1, "next")  # type: ignore[operator]
    first_tool = page(Checkpoint.objects.get(thread=world.thread, namespace="tools", step_index=0))
    assert _step(first_tool, "prev") is None and "tools" in (_step(first_tool, "next") or "")
    assert f"{world.tool.checkpoint_id}/?ns=tools" in _step(first_tool, "next")  # type: ignore[operator]
    assert "See it in the timeline" in step1
