"""`manage.py seed_demo` and `manage.py sweep_expired` (the pieces of `make run` that run in-process)."""

from __future__ import annotations

import io
import re
import socket
from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from checkpoints.management.commands.serve import ensure_port_free
from checkpoints.models import ApiKey, AuditEvent, Checkpoint, Job, Membership, Message, Thread, Workspace
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

KEY = re.compile(r"API key \(admin scope, shown once\): (cairn_\S+)")
PASSWORD = re.compile(r"Admin login: admin / (\S+)")


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def _row_counts() -> tuple[int, ...]:
    """How many threads, checkpoints, messages, jobs, API keys and audit events are stored."""
    return tuple(model.objects.count() for model in (Thread, Checkpoint, Message, Job, ApiKey, AuditEvent))


def test_it_seeds_the_demo_once_and_prints_each_secret_once() -> None:
    first = run("seed_demo")
    key_match, password_match = KEY.search(first), PASSWORD.search(first)
    assert key_match and password_match, first
    assert "Demo data loaded: checkpoints, messages, medallions" in first

    workspace = Workspace.objects.get(slug="demo")
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser and admin.check_password(password_match.group(1))
    assert Membership.objects.filter(workspace=workspace, user=admin).exists()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key_match.group(1)}")
    assert client.get("/api/v1/retention/").status_code == 200  # the printed key works

    counts = _row_counts()
    second = run("seed_demo")
    assert not KEY.search(second) and not PASSWORD.search(second)
    assert "create_api_key --workspace demo" in second and "changepassword admin" in second
    assert "Demo data loaded: nothing new" in second
    assert _row_counts() == counts
    assert get_user_model().objects.get(username="admin").check_password(password_match.group(1))


def test_it_seeds_chains_a_branch_a_handoff_a_pinned_a_tombstone_and_a_soon_expiring_checkpoint() -> None:
    run("seed_demo")
    research = Checkpoint.objects.filter(thread__thread_id="demo-research", namespace="").order_by("id")
    parents = [c.parent_checkpoint_id for c in research]
    assert len(parents) != len(set(parents))  # two children of one parent: a branch
    assert research.filter(pinned=True).count() == 1
    handoff = research.get(handoff_target__isnull=False)
    assert (handoff.agent_id, handoff.handoff_from) == ("writer", "researcher")
    assert Checkpoint.objects.filter(thread__thread_id="demo-research", namespace="researcher:fetch").exists()

    support = Checkpoint.objects.filter(thread__thread_id="demo-support").order_by("id")
    tombstone = support.get(expired_at__isnull=False)
    assert tombstone.state is None
    soon = support.get(expires_at__isnull=False, expired_at__isnull=True)
    assert soon.expires_at is not None
    assert timezone.now() < soon.expires_at <= timezone.now() + timedelta(minutes=5)
    assert all(c.checksum for c in Checkpoint.objects.all())
    threads = {t.thread_id: t for t in Thread.objects.all()}
    assert (threads["demo-research"].name, threads["demo-research"].user_id) == (
        "Hybrid search survey",
        "alice",
    )
    assert threads["demo-support"].tags == ["demo", "support"]


def test_it_sweeps_now_and_prints_the_counts(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    now = timezone.now()
    time_machine.move_to(now, tick=False)
    make_checkpoint(workspace, "t1", ttl_seconds=1)
    make_checkpoint(workspace, "t2", ttl_seconds=1)
    time_machine.move_to(now + timedelta(seconds=1), tick=False)

    preview = run("sweep_expired", "--dry-run", "--workspace", "acme")
    assert '"count": 2' in preview
    assert Checkpoint.objects.filter(expired_at__isnull=True).count() == 2

    assert run("sweep_expired") == "expired: 2\npruned: 0\nworkspaces: 1\n"
    assert AuditEvent.objects.get(action="retention.sweep").actor_label == "manage.py sweep_expired"
    assert run("sweep_expired", "--all", "--batch-size", "1") == (
        "expired: 0\npruned: 0\nworkspaces: 0\npurged: 0\nidle_threads: 0\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workspace", "nope"], "No workspace 'nope'"),
        (["--batch-size", "0"], "--batch-size must be at least 1"),
    ],
)
def test_it_refuses_bad_sweep_arguments(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run("sweep_expired", *args)


def test_it_refuses_to_serve_on_a_port_that_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match=f"Cannot listen on 127.0.0.1:{port}"):
            ensure_port_free("127.0.0.1", port)
    ensure_port_free("127.0.0.1", port)  # free again once released


def test_it_seeds_conversations_and_queues_the_two_summaries_for_the_worker() -> None:
    run("seed_demo")
    research = Message.objects.filter(thread__thread_id="demo-research").order_by("seq")
    assert [m.seq for m in research] == list(range(1, research.count() + 1))
    assert research.filter(content__contains="reciprocal rank fusion").exists()
    assert Message.objects.filter(thread__thread_id="demo-support").count() == 5
    jobs = Job.objects.filter(workspace__slug="demo", kind=Job.Kind.SUMMARIZE).order_by("id")
    assert [(j.status, j.params["operation"]) for j in jobs] == [
        (Job.Status.QUEUED, "thread"),
        (Job.Status.QUEUED, "checkpoint"),
    ]
    assert jobs[0].params["thread_id"] == "demo-research"
    assert jobs[1].params["scope"] == {
        "graph_nodes": ["module:billing", "repo:support-bot"],
        "tags": ["project_state"],
    }
