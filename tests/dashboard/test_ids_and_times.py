"""Polish shared by every dashboard page: ids shown by their distinguishing tail with the full id kept,
every timestamp in one format (date, year, seconds, UTC), and a favicon instead of a 404."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.services.workspaces import api_key_create
from checkpoints.templatetags.dashboard import short_id, stamp
from tests.dashboard.world import World

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "checkpoints" / "dashboard"
UUID = "01a20783-e0c1-7d2a-9f3b-4c5d6e7f8091"
STAMP = re.compile(r'<time datetime="[^"]+">\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC</time>')


def test_it_shows_a_uuid_by_its_random_tail_and_keeps_the_whole_id() -> None:
    html = short_id(UUID)
    assert html == (
        f'<code class="sid" title="{UUID}">'
        '<span class="sid-head">01a20783-e0c1-7d2a-9f3b-</span>'
        '<span class="sid-tail">4c5d6e7f8091</span></code>'
    )
    # The text content (what a selection copies) is the whole id; the ellipsis is drawn by CSS only.
    assert re.sub(r"<[^>]+>", "", html) == UUID


def test_it_shows_client_ids_whole_and_escapes_them() -> None:
    assert short_id("run-1") == '<code class="sid" title="run-1">run-1</code>'
    assert short_id('a"<b>') == '<code class="sid" title="a&quot;&lt;b&gt;">a&quot;&lt;b&gt;</code>'
    assert short_id(None) == "" and short_id("") == ""


def test_it_formats_every_timestamp_with_date_year_seconds_in_utc() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, 890_000, tzinfo=timezone(timedelta(hours=2)))
    assert stamp(moment) == '<time datetime="2026-03-04T03:06:07.890000+00:00">2026-03-04 03:06:07 UTC</time>'
    assert stamp(None) == ""


def test_no_template_formats_a_date_or_cuts_an_id_by_itself() -> None:
    for template in TEMPLATES.glob("*.html"):
        source = template.read_text()
        assert '|date:"' not in source and "|date:'" not in source, template.name
        assert not re.search(r"_id\|(truncatechars|stringformat)", source), template.name


@pytest.mark.django_db
def test_the_pages_show_short_ids_and_stamped_times(dash: Client, world: World) -> None:
    slug = world.workspace.slug
    thread = dash.get(reverse("dashboard:thread", args=[slug, "run-1"])).content.decode()
    tail = world.step2.checkpoint_id.rsplit("-", 1)[1]
    assert f'<span class="sid-tail">{tail}</span>' in thread
    assert f'title="{world.step2.checkpoint_id}"' in thread
    assert len(STAMP.findall(thread)) >= 10
    assert f'<code class="full-id">{world.thread.thread_id}</code>' in thread
    checkpoint = dash.get(
        reverse("dashboard:checkpoint", args=[slug, "run-1", world.step2.checkpoint_id]), {"ns": ""}
    ).content.decode()
    assert f'<h1>Checkpoint <code class="full-id">{world.step2.checkpoint_id}</code></h1>' in checkpoint
    api_key_create(workspace=world.workspace, name="ci")
    for name in ("overview", "audit", "jobs", "threads", "keys", "medallions"):
        page = dash.get(reverse(f"dashboard:{name}", args=[slug])).content.decode()
        assert STAMP.search(page), name
        assert not re.search(r"\d{2}:\d{2}(?!:\d{2})\s*</td>", page), name  # no time without its seconds


@pytest.mark.django_db
def test_it_serves_a_favicon_and_links_it(client: Client, dash: Client, world: World) -> None:
    icon = client.get("/favicon.ico")
    assert (icon.status_code, icon["Content-Type"]) == (200, "image/svg+xml")
    assert icon.content.startswith(b"<svg") and b"<script" not in icon.content
    page = dash.get(reverse("dashboard:overview", args=[world.workspace.slug])).content.decode()
    assert '<link rel="icon" type="image/svg+xml" href="/static/checkpoints/favicon.svg">' in page
    assert client.post("/favicon.ico").status_code == 405


def test_stamp_accepts_utc_datetimes() -> None:
    assert "2026-01-01 00:00:00 UTC" in stamp(datetime(2026, 1, 1, tzinfo=UTC))
