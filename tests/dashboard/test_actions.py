"""Every dashboard action: a confirmation page on GET, the service on POST (as the logged-in user, so an
audit event names them), and domain errors as friendly pages with the right status, never a 500."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkpoints.models import ApiKey, AuditEvent, Checkpoint, Job, Message, Thread
from checkpoints.services.workspaces import api_key_authenticate, api_key_create
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def action_url(
    world: World, name: str, checkpoint: Checkpoint | None = None, thread_id: str = "run-1"
) -> str:
    slug = world.workspace.slug
    if checkpoint is not None:
        url = reverse(f"dashboard:{name}", args=[slug, checkpoint.thread.thread_id, checkpoint.checkpoint_id])
        return f"{url}?ns={checkpoint.namespace}"
    return reverse(f"dashboard:{name}", args=[slug, thread_id])


def last_event() -> AuditEvent:
    event = AuditEvent.objects.order_by("-id").first()
    assert event is not None
    return event


def flashed(client: Client, response: Any) -> str:
    return client.get(response["Location"]).content.decode()


def test_it_asks_for_confirmation_before_acting(dash: Client, world: World) -> None:
    page = dash.get(action_url(world, "checkpoint-expire", world.step2))
    assert page.status_code == 200
    html = page.content.decode()
    assert "becomes a tombstone" in html and 'method="post"' in html and "csrfmiddlewaretoken" in html
    world.step2.refresh_from_db()
    assert world.step2.is_readable()


def test_it_forks_a_thread_from_a_checkpoint(dash: Client, world: World, staff: User) -> None:
    response = dash.post(
        action_url(world, "checkpoint-fork", world.step2), {"thread_id": "what-if", "name": "What if"}
    )
    assert response.status_code == 302 and response["Location"] == "/dashboard/w/acme/threads/what-if/"
    fork = Thread.objects.get(workspace=world.workspace, thread_id="what-if")
    assert fork.forked_from == world.thread and fork.forked_from_checkpoint_id == world.step2.checkpoint_id
    assert fork.name == "What if"
    assert Message.objects.filter(thread=fork).count() == world.step2.message_seq
    event = last_event()
    assert (event.action, event.actor_label, event.actor_user_id) == (
        "checkpoint.fork",
        "user:alice",
        staff.pk,
    )
    assert "Forked into thread what-if." in flashed(dash, response)


def test_it_generates_the_fork_id_when_none_is_given(dash: Client, world: World) -> None:
    response = dash.post(action_url(world, "checkpoint-fork", world.root), {})
    assert response.status_code == 302
    assert Thread.objects.filter(forked_from=world.thread).count() == 2


def test_it_expires_a_checkpoint(dash: Client, world: World) -> None:
    response = dash.post(action_url(world, "checkpoint-expire", world.step2))
    assert response.status_code == 302
    world.step2.refresh_from_db()
    assert world.step2.is_tombstone and world.step2.state is None
    assert (last_event().action, last_event().actor_label) == ("checkpoint.expire", "user:alice")


def test_it_pins_unpins_and_sets_the_expiry(dash: Client, world: World) -> None:
    assert dash.post(action_url(world, "checkpoint-pin", world.step2)).status_code == 302
    world.step2.refresh_from_db()
    assert world.step2.pinned and last_event().details["pinned"] is True
    assert dash.post(action_url(world, "checkpoint-unpin", world.step2)).status_code == 302
    world.step2.refresh_from_db()
    assert not world.step2.pinned
    before = timezone.now()
    assert (
        dash.post(action_url(world, "checkpoint-ttl", world.step2), {"ttl_seconds": "7200"}).status_code
        == 302
    )
    world.step2.refresh_from_db()
    assert world.step2.expires_at is not None
    assert before + timedelta(seconds=7190) < world.step2.expires_at < before + timedelta(seconds=7300)
    assert last_event().action == "checkpoint.ttl" and last_event().actor_label == "user:alice"
    assert dash.post(action_url(world, "checkpoint-ttl", world.step2), {"ttl_seconds": ""}).status_code == 302
    world.step2.refresh_from_db()
    assert world.step2.expires_at is None


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5", "99999999999999999999"])
def test_it_refuses_a_bad_ttl_with_the_form_error(dash: Client, world: World, value: str) -> None:
    events = AuditEvent.objects.count()
    response = dash.post(action_url(world, "checkpoint-ttl", world.step2), {"ttl_seconds": value})
    assert response.status_code == 400
    assert "field-error" in response.content.decode()
    assert AuditEvent.objects.count() == events


def test_it_turns_domain_errors_into_friendly_pages(dash: Client, world: World) -> None:
    pinned = dash.post(action_url(world, "checkpoint-expire", world.pinned))
    assert pinned.status_code == 409
    assert "Not done." in pinned.content.decode() and "pinned" in pinned.content.decode()
    gone = dash.post(action_url(world, "checkpoint-pin", world.tombstone))
    assert gone.status_code == 410 and "has expired" in gone.content.decode()
    taken = dash.post(action_url(world, "checkpoint-fork", world.step2), {"thread_id": "run-1-fork"})
    assert taken.status_code == 409 and "Not done." in taken.content.decode()
    bad_id = dash.post(action_url(world, "checkpoint-fork", world.step2), {"thread_id": "no spaces/allowed"})
    assert bad_id.status_code == 400
    Checkpoint.objects.filter(pk=world.step1.pk).update(state='{"forged":1}')
    tampered = dash.post(action_url(world, "checkpoint-fork", world.step1), {})
    assert tampered.status_code == 409 and "checksum" in tampered.content.decode()
    missing = reverse("dashboard:checkpoint-expire", args=[world.workspace.slug, "run-1", "nope"])
    assert dash.post(missing).status_code == 404


def test_it_deletes_a_thread(dash: Client, world: World) -> None:
    response = dash.post(action_url(world, "thread-delete"))
    assert response.status_code == 302 and response["Location"] == "/dashboard/w/acme/threads/"
    assert not Thread.objects.filter(thread_id="run-1").exists()
    assert not Checkpoint.objects.filter(thread__thread_id="run-1").exists()
    assert (last_event().action, last_event().actor_label, last_event().target_id) == (
        "thread.delete",
        "user:alice",
        "run-1",
    )
    assert "Thread run-1 deleted." in flashed(dash, response)


def test_it_prunes_a_thread(dash: Client, world: World) -> None:
    response = dash.post(action_url(world, "thread-prune"), {"strategy": "keep_latest"})
    assert response.status_code == 302
    assert Checkpoint.objects.filter(thread=world.thread).count() == 2  # the head of each namespace
    assert (last_event().action, last_event().actor_label) == ("thread.prune", "user:alice")
    assert re.search(r"Pruned \d+ checkpoints\.", flashed(dash, response))
    assert dash.post(action_url(world, "thread-prune"), {"strategy": "everything"}).status_code == 400


def test_it_runs_a_sweep_now_as_a_job(
    dash: Client, world: World, eager_jobs: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    due = make_checkpoint(world.workspace, "sweepme", state={"n": 1}, ttl_seconds=60)
    Checkpoint.objects.filter(pk=due.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        response = dash.post(reverse("dashboard:retention-sweep", args=[world.workspace.slug]))
    assert response.status_code == 302
    job = Job.objects.get(kind=Job.Kind.SWEEP)
    assert job.status == Job.Status.SUCCEEDED, job.error
    due.refresh_from_db()
    assert due.is_tombstone
    sweep = AuditEvent.objects.get(action="retention.sweep")
    assert sweep.actor_label == "user:alice"
    assert f"Sweep job {job.job_id} queued." in flashed(dash, response)


def test_it_creates_an_api_key_and_shows_the_secret_once(dash: Client, world: World) -> None:
    response = dash.post(
        reverse("dashboard:key-create", args=[world.workspace.slug]),
        {"name": "ci-runner", "scope": "read", "expires_in_days": "30"},
    )
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    secret = re.search(r'value="(cairn_[^"]+)"', response.content.decode()).group(1)  # type: ignore[union-attr]
    key = api_key_authenticate(secret)
    assert key is not None and key.name == "ci-runner" and key.scope == "read"
    assert key.workspace == world.workspace and key.expires_at is not None
    assert (last_event().action, last_event().actor_label) == ("apikey.create", "user:alice")
    listing = dash.get(reverse("dashboard:keys", args=[world.workspace.slug])).content.decode()
    assert "ci-runner" in listing and secret not in listing
    bad = dash.post(
        reverse("dashboard:key-create", args=[world.workspace.slug]), {"name": "", "scope": "root"}
    )
    assert bad.status_code == 400 and ApiKey.objects.count() == 1


def test_it_revokes_an_api_key(dash: Client, world: World) -> None:
    key, secret = api_key_create(workspace=world.workspace, name="leaked")
    response = dash.post(reverse("dashboard:key-revoke", args=[world.workspace.slug, key.prefix]))
    assert response.status_code == 302
    assert api_key_authenticate(secret) is None
    assert (last_event().action, last_event().actor_label) == ("apikey.revoke", "user:alice")
    assert (
        dash.get(reverse("dashboard:key-revoke", args=[world.workspace.slug, "zzzzzzzz"])).status_code == 404
    )


def test_it_summarises_a_thread_now_as_a_job(
    dash: Client, world: World, eager_jobs: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    no_scope = dash.post(
        action_url(world, "thread-summarize")
    )  # the scope form first (tests/dashboard/test_scope_form.py)
    assert (no_scope.status_code, no_scope["Location"]) == (
        302,
        action_url(world, "thread-scope") + "?then=summarize",
    )
    assert Job.objects.filter(kind=Job.Kind.SUMMARIZE).count() == 1  # the world's failed one only
    Thread.objects.filter(pk=world.thread.pk).update(scope={"graph_nodes": ["billing"], "tags": ["refactor"]})
    with django_capture_on_commit_callbacks(execute=True):
        response = dash.post(action_url(world, "thread-summarize"))
    assert response.status_code == 302
    job = Job.objects.filter(kind=Job.Kind.SUMMARIZE).order_by("-id").first()
    assert job is not None and job.params["thread_id"] == "run-1"
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert AuditEvent.objects.filter(action="thread.summarize", actor_label="user:alice").count() == 1
    page = flashed(dash, response)
    assert f"Summary job {job.job_id} queued." in page
    assert "succeeded" in page  # the job is listed on the thread page


@pytest.mark.django_db(transaction=True)
def test_it_reports_a_broker_outage_without_leaving_a_job(dash: Client, world: World) -> None:
    from tests.jobs.helpers import broker_down

    with broker_down():
        response = dash.post(reverse("dashboard:retention-sweep", args=[world.workspace.slug]))
    assert response.status_code == 503
    assert "Not done." in response.content.decode() and "unavailable" in response.content.decode()
    assert not Job.objects.filter(kind=Job.Kind.SWEEP).exists()
