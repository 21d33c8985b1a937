"""Headless Chromium: the overview's charts and the thread's sparkline match the data, "Summarise now" on a
thread without a scope sets one and summarises, no main page overflows an 800 px window, no label of the
checkpoint tree is cut there (long ones wrap), and ids show their tail with the whole id on hover and in a
copy. With CAIRN_SCREENSHOTS=1 they write docs/screenshots/overview-charts.png, thread-sparkline.png and
scope-form.png."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from checkpoints.models import Checkpoint, Job, Message, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_handoff
from checkpoints.services.messages import messages_append
from tests.browser.helpers import SCREENSHOT_WIDTH, follow, log_in
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NARROW = {"width": 800, "height": 900}


def spread_activity(workspace: Workspace) -> dict[int, int]:
    """Checkpoints and messages over the last day and a half, so the charts have a shape: returns hours
    ago → checkpoints saved then."""
    now = timezone.now()
    plan = {30: 2, 20: 4, 12: 1, 5: 6, 2: 3}
    for hours, count in plan.items():
        for n in range(count):
            make_checkpoint(
                workspace, f"batch-{hours}", agent_id="worker", state={"n": n, "pad": "x" * 400 * hours}
            )
        messages_append(
            workspace=workspace,
            thread_id=f"batch-{hours}",
            messages=[{"role": "user", "content": f"step {n}"} for n in range(count * 2)],
        )
        thread = Thread.objects.get(workspace=workspace, thread_id=f"batch-{hours}")
        when = now - timedelta(hours=hours)
        Checkpoint.objects.filter(thread=thread).update(created_at=when)
        Message.objects.filter(thread=thread).update(created_at=when)
        Thread.objects.filter(pk=thread.pk).update(created_at=when)
    return plan


def bar_values(page: Any, chart: str, series: str) -> list[int]:
    values: list[str] = page.locator(f'#{chart} rect.bar[data-series="{series}"]').evaluate_all(
        "bars => bars.map(bar => bar.getAttribute('data-value'))"
    )
    return [int(value) for value in values]


def test_the_overview_draws_activity_and_storage_charts_matching_the_data(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    plan = spread_activity(world.workspace)
    in_window = Checkpoint.objects.filter(
        workspace=world.workspace, created_at__gte=timezone.now() - timedelta(hours=47)
    ).count()
    log_in(page, live_server, viewport=SCREENSHOT_WIDTH)
    activity = page.locator("#activity-chart")
    assert activity.is_visible()
    assert sum(bar_values(page, "activity-chart", "checkpoints")) == in_window
    assert sorted(bar_values(page, "activity-chart", "checkpoints"))[-1] >= max(plan.values())
    assert (
        sum(bar_values(page, "activity-chart", "messages"))
        == Message.objects.filter(thread__workspace=world.workspace).count()
    )
    assert page.locator("#activity-chart title").first.text_content().startswith("Activity — last 48 hours")
    assert page.locator("#activity-chart .chart-xtick").count() == 8
    # As wide as its card's content (never wider: readable at 800 px, see the overflow test).
    box, card = activity.bounding_box(), page.locator("#charts").bounding_box()
    assert box is not None and card is not None and card["width"] * 0.9 <= box["width"] <= card["width"]
    storage_points = page.locator("#storage-chart circle.point")
    assert storage_points.count() == 30
    live = Checkpoint.objects.filter(workspace=world.workspace, expired_at__isnull=True)
    total = sum(live.values_list("size_bytes", flat=True))
    assert int(storage_points.last.get_attribute("data-value")) == total  # held now
    screenshot(page, "overview-charts")

    page.get_by_role("combobox", name="Period").select_option("30d")
    follow(page, page.get_by_role("button", name="Show"))
    assert page.url.endswith("?window=30d#charts")
    assert page.locator("#activity-chart title").first.text_content().startswith("Activity — last 30 days")
    assert bar_values(page, "activity-chart", "checkpoints") == [
        int(v) for v in _daily(world.workspace).values() if v
    ]


def _daily(workspace: Workspace) -> dict[str, int]:
    counts: dict[str, int] = {}
    for created in (
        Checkpoint.objects.filter(workspace=workspace)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    ):
        day = created.strftime("%Y-%m-%d")
        counts[day] = counts.get(day, 0) + 1
    return counts


def test_the_thread_page_draws_a_sparkline_of_its_checkpoints(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    spread_activity(world.workspace)
    log_in(page, live_server, "/dashboard/w/acme/threads/run-1/", viewport=SCREENSHOT_WIDTH)
    bars = page.locator("svg.sparkline rect.spark-bar")
    values = [int(v) for v in bars.evaluate_all("bars => bars.map(b => b.getAttribute('data-value'))")]
    assert sum(values) == Checkpoint.objects.filter(thread=world.thread).count()
    assert page.locator("svg.sparkline title").first.text_content() == "Checkpoints per hour"
    screenshot(page, "thread-sparkline")

    log_in_again = page.goto(live_server.url + "/dashboard/w/acme/threads/batch-20/")
    assert log_in_again is not None and log_in_again.ok
    assert [
        int(v)
        for v in page.locator("svg.sparkline rect.spark-bar").evaluate_all(
            "bars => bars.map(b => b.getAttribute('data-value'))"
        )
    ] == [4]


def test_summarise_now_without_a_scope_sets_one_then_summarises(
    page: Any, live_server: LiveServer, world: World, eager_celery: None, screenshot: Any
) -> None:
    log_in(page, live_server, "/dashboard/w/acme/threads/run-1/", viewport=SCREENSHOT_WIDTH)
    summarise = page.get_by_role("button", name="Summarise now…")
    assert summarise.is_disabled()
    assert "needs a medallion scope" in page.locator("#summarise-why").inner_text()
    follow(page, page.get_by_role("link", name="Set a scope and summarise…"))
    page.get_by_label("Graph nodes").fill("billing, planner")
    page.get_by_label("Tags").fill("refactor")
    screenshot(page, "scope-form")
    follow(page, page.get_by_role("button", name="Save scope"))
    assert "Scope of thread run-1 set." in page.locator(".flash").inner_text()
    follow(page, page.get_by_role("button", name="Summarise", exact=True))
    flash = page.locator(".flash").inner_text()
    job = Job.objects.filter(kind=Job.Kind.SUMMARIZE).latest("id")
    assert f"Summary job {job.job_id} queued." in flash
    assert Thread.objects.get(pk=world.thread.pk).scope == {
        "graph_nodes": ["billing", "planner"],
        "tags": ["refactor"],
    }
    # Every message is in the medallion now: disabled again, saying why.
    assert "is already in the medallion" in page.locator("#summarise-why").inner_text()


def test_no_main_page_overflows_an_800_px_window(page: Any, live_server: LiveServer, world: World) -> None:
    spread_activity(world.workspace)
    log_in(page, live_server, viewport=NARROW)
    slug, thread, step = "acme", "run-1", world.step2.checkpoint_id
    paths = [
        f"/dashboard/w/{slug}/",
        f"/dashboard/w/{slug}/?window=30d",
        f"/dashboard/w/{slug}/threads/",
        f"/dashboard/w/{slug}/threads/{thread}/",
        f"/dashboard/w/{slug}/threads/{thread}/timeline/",
        f"/dashboard/w/{slug}/threads/{thread}/checkpoints/{step}/?ns=",
        f"/dashboard/w/{slug}/threads/{thread}/checkpoints/{step}/diff/?ns=",
        f"/dashboard/w/{slug}/search/?q=billing",
        f"/dashboard/w/{slug}/handoffs/",
        f"/dashboard/w/{slug}/medallions/",
        f"/dashboard/w/{slug}/medallions/{world.medallion.medallion_id}/",
        f"/dashboard/w/{slug}/audit/",
        f"/dashboard/w/{slug}/jobs/",
        f"/dashboard/w/{slug}/retention/",
        f"/dashboard/w/{slug}/keys/",
        f"/dashboard/w/{slug}/jobs/{Job.objects.filter(workspace=world.workspace).first().job_id}/",  # type: ignore[union-attr]
        f"/dashboard/w/{slug}/threads/{thread}/checkpoints/{step}/fork/?ns=",
        f"/dashboard/w/{slug}/threads/{thread}/scope/",
        f"/dashboard/w/{slug}/retention/edit/",
    ]
    overflowing = []
    for path in paths:
        response = page.goto(live_server.url + path)
        assert response is not None and response.ok, path
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        if widths[0] > widths[1]:
            overflowing.append((path, widths))
    assert overflowing == []


def test_ids_show_their_tail_with_the_whole_id_on_hover_and_in_a_copy(
    page: Any, live_server: LiveServer, world: World
) -> None:
    log_in(page, live_server, "/dashboard/w/acme/threads/run-1/")
    full = world.step2.checkpoint_id
    sid = page.locator(f'a.t-link[href*="{full}"] code.sid')
    assert sid.get_attribute("title") == full
    tail = full.rsplit("-", 1)[1]
    assert sid.locator(".sid-tail").inner_text() == tail
    shown = sid.bounding_box()
    assert shown is not None and shown["width"] < 120  # about "…" and 12 hex digits, not 36 characters
    sid.hover()
    assert (
        page.evaluate(
            "el => getComputedStyle(el, '::before').content", sid.locator(".sid-tail").element_handle()
        )
        == '"…"'
    )
    copied = page.evaluate(
        """el => { const range = document.createRange(); range.selectNodeContents(el);
                  const selection = getSelection(); selection.removeAllRanges(); selection.addRange(range);
                  return selection.toString(); }""",
        sid.element_handle(),
    )
    assert copied == full


LABELS_CUT = """labels => labels.map(label => {
    const shown = label.getBoundingClientRect();
    const rows = label.closest(".tree-rows").getBoundingClientRect();
    return {
        text: label.innerText,
        cut: label.scrollWidth > label.clientWidth || label.scrollHeight > label.clientHeight,
        inside: shown.left >= rows.left && shown.right <= rows.right,
        ellipsis: getComputedStyle(label).textOverflow === "ellipsis",
    };
})"""


def test_no_label_of_the_checkpoint_tree_is_cut_at_800_px(
    page: Any, live_server: LiveServer, world: World
) -> None:
    agent = "billing-reconciliation-agent-eu-west-1-production-canary-7"
    step = "reconcile every invoice of the quarter with the ledger and flag each mismatch for review"
    saved = make_checkpoint(world.workspace, "run-1", agent_id=agent, step_name=step, state={"n": 1})
    checkpoint_handoff(source=saved, target_agent_id=f"{agent}-reviewer", actor=Actor.system("t"))
    log_in(page, live_server, "/dashboard/w/acme/threads/run-1/", viewport=NARROW)
    tree = page.locator('details.tree[data-namespace=""]')
    labels = tree.locator(".t-meta, .badge-handoff").evaluate_all(LABELS_CUT)
    assert len(labels) == tree.locator("li.tree-row").count() + 2  # every row's label, and two handoffs
    assert [label for label in labels if label["cut"] or not label["inside"] or label["ellipsis"]] == []
    texts = [label["text"] for label in labels]
    assert f"step {saved.step_index} · {agent} · {step}" in texts
    assert f"handoff {agent} → {agent}-reviewer" in texts
    # The long label wraps: its row grows, the lanes' drawing grows with it, and nothing scrolls sideways.
    row = tree.locator("li.tree-row", has=page.locator(f'a[href*="{saved.checkpoint_id}"]'))
    row_height, svg_height = row.evaluate(
        "row => [row.getBoundingClientRect().height, row.querySelector('svg').getBoundingClientRect().height]"
    )
    assert row_height > 30 and svg_height == row_height
    assert tree.locator(".tree-rows").evaluate("rows => rows.scrollWidth <= rows.clientWidth")
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
