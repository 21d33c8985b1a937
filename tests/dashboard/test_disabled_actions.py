"""An action that cannot work is shown disabled on the checkpoint page, with the reason and the fix: "Expire
now" on a pinned checkpoint, every action on an expired or tombstoned one, previous / next step at either end
of a namespace. The server still refuses each of those actions if it is posted anyway."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkpoints.models import AuditEvent, Checkpoint, Thread
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CHECKPOINT_ACTIONS = (
    "checkpoint-fork",
    "checkpoint-pin",
    "checkpoint-unpin",
    "checkpoint-ttl",
    "checkpoint-expire",
)


def url(world: World, name: str, checkpoint: Checkpoint) -> str:
    path = reverse(
        f"dashboard:{name}",
        args=[world.workspace.slug, checkpoint.thread.thread_id, checkpoint.checkpoint_id],
    )
    return f"{path}?ns={checkpoint.namespace}"


def page(dash: Client, world: World, checkpoint: Checkpoint) -> str:
    response = dash.get(url(world, "checkpoint", checkpoint))
    assert response.status_code == 200
    return response.content.decode()


def disabled(label: str, why: str, danger: bool = False) -> str:
    css = "btn btn-danger" if danger else "btn"
    return f'<button type="button" class="{css}" disabled aria-describedby="{why}">{label}</button>'


def test_it_disables_expire_now_on_a_pinned_checkpoint_and_says_to_unpin_it(
    dash: Client, world: World
) -> None:
    html = page(dash, world, world.pinned)
    assert disabled("Expire now…", "expire-why", danger=True) in html
    assert url(world, "checkpoint-expire", world.pinned) not in html  # not offered as a link
    why = html.split('id="expire-why"')[1].split("</p>")[0]
    assert "Pinned checkpoints never expire — unpin it first" in why
    assert f'<a href="{url(world, "checkpoint-unpin", world.pinned)}">Unpin…</a>' in why
    # The other actions still work on it.
    for name in ("checkpoint-fork", "checkpoint-unpin", "checkpoint-ttl"):
        assert f'href="{url(world, name, world.pinned)}"' in html
    assert "actions-why" not in html
    # Posted anyway, expiring it is refused and changes nothing.
    events = AuditEvent.objects.count()
    refused = dash.post(url(world, "checkpoint-expire", world.pinned))
    assert refused.status_code == 409 and "unpin it before expiring it" in refused.content.decode()
    world.pinned.refresh_from_db()
    assert world.pinned.is_readable() and AuditEvent.objects.count() == events


def test_it_disables_every_action_on_a_tombstone_and_offers_to_fork_an_earlier_checkpoint(
    dash: Client, world: World
) -> None:
    html = page(dash, world, world.tombstone)
    for label in ("Fork from here…", "Pin…", "Set expiry…"):
        assert disabled(label, "actions-why") in html
    assert disabled("Expire now…", "actions-why", danger=True) in html
    for name in CHECKPOINT_ACTIONS:
        assert url(world, name, world.tombstone) not in html
    why = html.split('id="actions-why"')[1].split("</p>")[0]
    expired_at = world.tombstone.expired_at
    assert expired_at is not None
    assert f'This checkpoint expired on <time datetime="{expired_at.isoformat()}">' in why
    assert "its state was erased: it can no longer be forked, pinned, given an expiry or expired" in why
    # Its parent is the handoff, still readable: the fix forks from there.
    assert world.tombstone.parent_checkpoint_id == world.handoff.checkpoint_id
    fork_instead = f'<a href="{url(world, "checkpoint-fork", world.handoff)}" data-fork-instead>'
    assert f"Fork from an earlier one: {fork_instead}Fork from " in why
    assert f"(step {world.handoff.step_index})…</a>" in why


def test_the_server_still_refuses_every_action_on_an_expired_checkpoint(dash: Client, world: World) -> None:
    events, threads = AuditEvent.objects.count(), Thread.objects.count()
    for name in CHECKPOINT_ACTIONS:
        refused = dash.post(url(world, name, world.tombstone), {"thread_id": "from-a-tombstone"})
        assert refused.status_code == 410, name
        assert "has expired" in refused.content.decode()
    assert AuditEvent.objects.count() == events and Thread.objects.count() == threads


def test_an_expired_checkpoint_not_yet_swept_names_its_expiry_and_the_thread_when_no_ancestor_is_readable(
    dash: Client, world: World
) -> None:
    lone = make_checkpoint(world.workspace, "short-lived", state={"n": 1}, ttl_seconds=60)
    expired = timezone.now() - timedelta(hours=1)
    Checkpoint.objects.filter(pk=lone.pk).update(expires_at=expired)
    html = page(dash, world, lone)
    assert disabled("Fork from here…", "actions-why") in html
    why = html.split('id="actions-why"')[1].split("</p>")[0]
    assert f'expired on <time datetime="{expired.isoformat()}">' in why and "erased" not in why
    assert "None of its ancestors is readable either: fork from a live checkpoint of" in why
    thread = reverse("dashboard:thread", args=[world.workspace.slug, "short-lived"])
    assert f'<a href="{thread}#tree">the thread\'s tree</a>' in why
    assert dash.post(url(world, "checkpoint-fork", lone), {}).status_code == 410


def test_a_readable_checkpoint_offers_every_action_as_a_link(dash: Client, world: World) -> None:
    html = page(dash, world, world.step2)
    for name in ("checkpoint-fork", "checkpoint-pin", "checkpoint-ttl", "checkpoint-expire"):
        assert f'href="{url(world, name, world.step2)}"' in html
    assert " disabled " not in html and "actions-why" not in html and "expire-why" not in html


def test_previous_and_next_step_say_why_they_are_disabled(dash: Client, world: World) -> None:
    first = page(dash, world, world.root)
    assert disabled("← Previous step", "previous-why") in first
    assert '<span class="small muted" id="previous-why" data-step-why>This is the first step.</span>' in first
    assert 'rel="next"' in first and "next-why" not in first
    last = page(dash, world, world.tool)
    assert disabled("Next step →", "next-why") in last
    assert "This is the latest step of namespace <code>tools</code>." in last
    assert 'rel="prev"' in last and "previous-why" not in last
    middle = page(dash, world, world.step1)
    assert 'rel="prev"' in middle and 'rel="next"' in middle and "data-step-why" not in middle
    assert 'class="btn disabled"' not in first + last  # buttons, not look-alike spans
