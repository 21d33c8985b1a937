"""Who wrote a checkpoint, in the dashboard: shown on its page, searchable, and recorded as the signed-in
user when the dashboard itself writes one (a fork's head)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from checkpoints.models import Checkpoint, Thread
from tests.dashboard.test_actions import action_url
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db


def _page(dash: Client, world: World, checkpoint: Checkpoint) -> str:
    args = [world.workspace.slug, world.thread.thread_id, checkpoint.checkpoint_id]
    return dash.get(reverse("dashboard:checkpoint", args=args), {"ns": ""}).content.decode()


def test_a_fork_from_the_dashboard_is_written_by_the_signed_in_user(
    dash: Client, world: World, staff: User
) -> None:
    dash.post(action_url(world, "checkpoint-fork", world.step2), {"thread_id": "what-if"})

    fork = Thread.objects.get(workspace=world.workspace, thread_id="what-if")
    head = Checkpoint.objects.get(thread=fork)
    assert head.written_by == f"user:{staff.get_username()}"


def test_the_checkpoint_page_shows_its_writer_or_says_it_was_not_recorded(dash: Client, world: World) -> None:
    Checkpoint.objects.filter(pk=world.step1.pk).update(written_by="key:abc123<b>")

    shown = _page(dash, world, world.step1)
    unrecorded = _page(dash, world, world.step2)

    assert "<code>key:abc123&lt;b&gt;</code>" in shown
    assert "written_by=key%3Aabc123%3Cb%3E" in shown  # links its other checkpoints, escaped
    assert "not recorded" in unrecorded


def test_search_finds_the_checkpoints_of_one_writer(dash: Client, world: World) -> None:
    Checkpoint.objects.filter(pk__in=[world.root.pk, world.step2.pk]).update(written_by="user:alice")
    url = reverse("dashboard:search", args=[world.workspace.slug])

    page = dash.get(url, {"kind": "checkpoints", "written_by": "user:alice"}).content.decode()

    found = {c.checkpoint_id for c in Checkpoint.objects.filter(thread=world.thread)} & set(
        part.split("?")[0].rstrip("/").rsplit("/", 1)[-1] for part in page.split('href="')[1:]
    )
    assert found == {world.root.checkpoint_id, world.step2.checkpoint_id}
