"""What each dashboard page shows, checked in the HTML (not only the status code)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkpoints.models import AuditEvent, Checkpoint, Medallion, Membership, Thread, Workspace
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.checkpoints import checkpoint_set_ttl
from checkpoints.services.messages import messages_append
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def checkpoint_url(world: World, checkpoint: Checkpoint, view: str = "checkpoint", **params: str) -> str:
    url = reverse(
        f"dashboard:{view}",
        args=[world.workspace.slug, checkpoint.thread.thread_id, checkpoint.checkpoint_id],
    )
    return url + "?" + "&".join([f"ns={checkpoint.namespace}", *(f"{k}={v}" for k, v in params.items())])


def text(response: Any) -> str:
    return str(response.content.decode())


def first_match(pattern: str, html: str) -> str:
    found = re.search(pattern, html)
    assert found is not None, pattern
    return found.group(1)


def test_it_lists_only_the_users_workspaces_on_the_home_page(
    dash: Client, staff: User, workspace: Workspace, other_workspace: Workspace
) -> None:
    third = Workspace.objects.create(slug="initech", name="Initech")
    Membership.objects.create(workspace=third, user=staff)
    page = text(dash.get(reverse("dashboard:home")))
    assert f'href="/dashboard/w/{workspace.slug}/"' in page and 'href="/dashboard/w/initech/"' in page
    assert other_workspace.slug not in page


def test_it_opens_the_only_workspace_directly(
    dash: Client, workspace: Workspace, other_workspace: Workspace
) -> None:
    response = dash.get(reverse("dashboard:home"))
    assert (response.status_code, response["Location"]) == (302, f"/dashboard/w/{workspace.slug}/")
    page = text(dash.get(reverse("dashboard:home"), follow=True))
    assert f"{workspace.name} <small" in page and other_workspace.slug not in page


def test_it_summarises_the_workspace_on_the_overview(dash: Client, world: World) -> None:
    soon = make_checkpoint(world.workspace, "run-2", state={"x": 1}, ttl_seconds=600)
    page = text(dash.get(reverse("dashboard:overview", args=[world.workspace.slug])))
    counts = {
        label: value
        for value, label in re.findall(r'stat-value">([^<]+)</span><span class="stat-label">([^<]+)<', page)
    }
    assert counts["Threads"] == "3"  # run-1, its fork and run-2
    assert counts["Tombstones"] == "1"
    assert counts["Live checkpoints"] == "10"  # 8 live in run-1, the fork's head, run-2's
    assert counts["Messages"] == "5"  # 3 in run-1, 2 copied into the fork
    assert counts["Active medallions"] == "1"
    assert soon.checkpoint_id[:20] in page  # expiring within 24 hours
    assert "LLMError: the model returned invalid JSON" in page  # the failed job
    assert "checkpoint.fork" in page  # recent audit events


def test_it_filters_sorts_and_pages_the_thread_list(dash: Client, workspace: Workspace) -> None:
    for n in range(7):
        make_checkpoint(workspace, f"t-{n}", state={"n": n})
    Thread.objects.filter(thread_id__in=["t-1", "t-2"]).update(user_id="ada", tags=["prod", "eu"])
    Thread.objects.filter(thread_id="t-3").update(name="Quarterly report", tags=["prod"])
    Thread.objects.filter(thread_id="t-4").update(created_at=timezone.now() - timedelta(days=40))
    url = reverse("dashboard:threads", args=[workspace.slug])

    def ids(**params: str) -> list[str]:
        return re.findall(r'/threads/(t-\d)/"', text(dash.get(url, params)))

    assert ids(user_id="ada") == ["t-2", "t-1"]
    assert sorted(ids(tag="eu, nothing")) == ["t-1", "t-2"]
    assert ids(q="quarterly") == ["t-3"]
    assert ids(q="t-6") == ["t-6"]
    assert ids(date_field="created_at", date_to=str((timezone.now() - timedelta(days=30)).date())) == ["t-4"]
    assert ids(ordering="created_at")[0] == "t-4"
    assert ids(ordering="-updated_at")[0] == "t-6"
    first = ids(limit="3")
    assert first == ["t-6", "t-5", "t-4"]
    page = text(dash.get(url, {"limit": "3"}))
    next_url = first_match(r'href="([^"]+)" rel="next"', page)
    following = re.findall(r'/threads/(t-\d)/"', text(dash.get(next_url.replace("&amp;", "&"))))
    assert following == ["t-3", "t-2", "t-1"]


def test_it_refuses_bad_list_input_with_a_message_not_an_error(dash: Client, workspace: Workspace) -> None:
    url = reverse("dashboard:threads", args=[workspace.slug])
    nul = dash.get(url, {"q": "a\x00b"})
    assert nul.status_code == 200 and "Null characters are not allowed" in text(nul)
    assert "field-error" in text(dash.get(url, {"date_from": "yesterday"}))
    assert "field-error" in text(dash.get(url, {"ordering": "password"}))
    assert "field-error" in text(dash.get(url, {"q": "x" * 201}))
    bad_cursor = dash.get(url, {"cursor": "not-a-cursor"})
    assert bad_cursor.status_code == 400 and "Invalid cursor" in text(bad_cursor)
    assert dash.get(url, {"limit": "0"}).status_code == 400
    assert dash.get(url, {"limit": "100000"}).status_code == 400
    audit = reverse("dashboard:audit", args=[workspace.slug])
    inverted = dash.get(audit, {"date_from": "2025-02-01", "date_to": "2025-01-01"})
    assert "The start date is after the end date" in text(inverted)


def test_it_draws_the_checkpoint_tree_with_branches_heads_handoffs_and_tombstones(
    dash: Client, world: World
) -> None:
    page = text(dash.get(reverse("dashboard:thread", args=[world.workspace.slug, "run-1"])))
    trees = re.findall(r'<details class="tree" data-namespace="([^"]*)"( open)?>', page)
    assert trees == [("", " open"), ("tools", "")]
    rows = re.findall(
        r'<li class="tree-row([^"]*)">\s*(<svg.*?</svg>)\s*'
        r'<div class="t-body">\s*<a class="t-link" href="([^"]+)"',
        page,
        re.S,
    )
    assert len(rows) == 9
    by_id = {href.split("/checkpoints/")[1].split("/")[0]: (classes, svg) for classes, svg, href in rows}
    assert "is-head" in by_id[world.pinned.checkpoint_id][0]
    assert "is-head" in by_id[world.tool.checkpoint_id][0]  # every namespace has its head
    assert "is-tomb" in by_id[world.tombstone.checkpoint_id][0]
    assert "<polygon" in by_id[world.handoff.checkpoint_id][1]  # handoffs are diamonds
    # The retry branch leaves the root's lane: its node sits in another column than the root's.
    root_x = first_match(r'cx="(\d+)"', by_id[world.root.checkpoint_id][1])
    branch_x = first_match(r'cx="(\d+)"', by_id[world.branch.checkpoint_id][1])
    assert root_x != branch_x
    assert f'branch of <code class="sid" title="{world.root.checkpoint_id}"' in page
    assert "handoff planner → reviewer" in page
    assert 'href="/dashboard/w/acme/threads/run-1-fork/"' in page  # the fork is marked on its checkpoint
    assert "Plan the refactor of the billing service." in page  # messages
    assert "Billing is being split" in page  # medallion
    assert "LLMError" in page  # job


def test_it_searches_the_threads_messages(dash: Client, world: World) -> None:
    url = reverse("dashboard:thread", args=[world.workspace.slug, "run-1"])
    found = text(dash.get(url, {"search": "INVOICES"}))
    assert "We decided to split invoices from payments." in found
    assert "Plan the refactor" not in found
    assert "pytest: 42 passed" in text(dash.get(url, {"role": "tool"}))
    assert "No messages match" in text(dash.get(url, {"search": "role"}))


def test_it_pages_long_conversations(dash: Client, workspace: Workspace) -> None:
    messages_append(
        workspace=workspace,
        thread_id="long",
        messages=[{"role": "user", "content": f"message number {n}"} for n in range(120)],
    )
    url = reverse("dashboard:thread", args=[workspace.slug, "long"])
    page = text(dash.get(url))
    assert "message number 49<" in page and "message number 50<" not in page
    next_url = first_match(r'href="([^"]+)" rel="next"', page).replace("&amp;", "&")
    assert "message number 50<" in text(dash.get(next_url))


def test_it_verifies_the_checkpoint_on_every_view_and_shows_tampering(dash: Client, world: World) -> None:
    url = checkpoint_url(world, world.step2)
    page = text(dash.get(url))
    assert 'data-integrity="verified"' in page
    assert "&quot;refactor billing&quot;" in page
    assert world.step1.checkpoint_id in page  # lineage
    Checkpoint.objects.filter(pk=world.step2.pk).update(metadata='{"source":"forged"}')
    tampered = text(dash.get(url))
    assert 'data-integrity="mismatch"' in tampered and "Checksum mismatch" in tampered
    assert 'data-integrity="erased"' in text(dash.get(checkpoint_url(world, world.tombstone)))


def test_it_renders_hostile_state_as_text(dash: Client, world: World) -> None:
    hostile = make_checkpoint(
        world.workspace,
        "run-1",
        agent_id="<b>agent</b>",
        step_name="<i>step</i>",
        state={
            "<script>alert('k')</script>": "</details><script>alert(1)</script>",
            "list": ["<img src=x onerror=alert(2)>"],
        },
        metadata={"note": '"><svg onload=alert(3)>'},
    )
    page = text(dash.get(checkpoint_url(world, hostile)))
    for raw in ("<script>alert", "<img src=x", "<svg onload", "<b>agent</b>", "<i>step</i>"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    thread_page = text(dash.get(reverse("dashboard:thread", args=[world.workspace.slug, "run-1"])))
    assert "<b>agent</b>" not in thread_page and "&lt;b&gt;agent&lt;/b&gt;" in thread_page


def test_it_caps_a_5_mb_state_and_offers_the_raw_download(dash: Client, world: World) -> None:
    big_state = {"rows": [{"id": n, "text": "x" * 90} for n in range(50_000)], "blob": "y" * 100_000}
    big = make_checkpoint(world.workspace, "big", state=big_state)
    assert big.size_bytes > 5_000_000
    response = dash.get(checkpoint_url(world, big))
    page = text(response)
    assert response.status_code == 200
    assert len(page) < 1_000_000  # the page stays small however large the state
    assert "Large document: showing" in page and "more items not shown" in page
    download = checkpoint_url(world, big, "checkpoint-raw", part="state")
    assert download.replace("&", "&amp;") in page
    raw = dash.get(download)
    assert raw["Content-Disposition"].startswith("attachment;")
    assert raw["X-Checksum-Verified"] == "true"
    assert raw.content.decode() == Checkpoint.objects.get(pk=big.pk).state
    assert json.loads(raw.content) == big_state


def test_it_refuses_the_raw_download_of_an_expired_checkpoint(dash: Client, world: World) -> None:
    response = dash.get(checkpoint_url(world, world.tombstone, "checkpoint-raw", part="state"))
    assert response.status_code == 410 and "has expired" in text(response)
    assert dash.get(checkpoint_url(world, world.step2, "checkpoint-raw", part="secrets")).status_code == 400


def test_it_diffs_against_the_parent_by_default_side_by_side(dash: Client, world: World) -> None:
    page = text(dash.get(checkpoint_url(world, world.step2, "checkpoint-diff")))
    assert f'from <a href="/dashboard/w/acme/threads/run-1/checkpoints/{world.step1.checkpoint_id}/' in page
    rows = re.findall(r'<tr class="diff-(\w+)">.*?<code>([^<]*)</code>', page, re.S)
    assert ("add", "/state/score") in rows
    assert any(op == "move" for op, _ in rows)


def test_it_diffs_against_any_checkpoint_even_in_another_thread(dash: Client, world: World) -> None:
    fork_head = Checkpoint.objects.get(thread=world.fork)
    make_checkpoint(world.workspace, world.fork.thread_id, state={"goal": "refactor billing", "forked": True})
    forked = Checkpoint.objects.filter(thread=world.fork).order_by("-id").first()
    assert forked is not None
    page = text(
        dash.get(
            checkpoint_url(
                world,
                forked,
                "checkpoint-diff",
                against=world.step2.checkpoint_id,
                against_thread="run-1",
                against_ns="",
            )
        )
    )
    assert "thread run-1" in page  # marked as a cross-thread diff
    assert "/state/forked" in page and "/state/score" in page
    same = text(
        dash.get(
            checkpoint_url(
                world,
                fork_head,
                "checkpoint-diff",
                against=world.step1.checkpoint_id,
                against_thread="run-1",
                against_ns="",
            )
        )
    )
    assert "No differences: the documents are identical." in same
    patch = dash.get(checkpoint_url(world, world.step2, "checkpoint-diff", format="json"))
    assert {"op": "add", "path": "/state/score", "value": 0.93} in json.loads(patch.content)


def test_it_explains_diffs_that_cannot_be_made(dash: Client, world: World) -> None:
    gone = dash.get(
        checkpoint_url(world, world.step2, "checkpoint-diff", against=world.tombstone.checkpoint_id)
    )
    assert gone.status_code == 410 and "has expired" in text(gone)
    missing = dash.get(
        checkpoint_url(world, world.step2, "checkpoint-diff", against="nope", against_thread="x")
    )
    assert missing.status_code == 404


def test_it_browses_medallions_by_scope_with_revision_diffs(dash: Client, world: World) -> None:
    Medallion.objects.create(
        workspace=world.workspace,
        graph_nodes=["search"],
        tags=["infra"],
        scope_key="s" * 64,
        high_level="Search runs on one index.",
    )
    url = reverse("dashboard:medallions", args=[world.workspace.slug])
    assert "Search runs on one index." in text(dash.get(url))
    billing = text(dash.get(url, {"graph_nodes": "billing"}))
    assert "Billing is being split" in billing and "Search runs" not in billing
    assert "Search runs" in text(dash.get(url, {"tags": "infra, other"}))
    assert "No medallions match" in text(dash.get(url, {"status": "stale"}))
    detail_url = reverse("dashboard:medallion", args=[world.workspace.slug, world.medallion.medallion_id])
    detail = text(dash.get(detail_url))
    assert "Split invoices from payments" in detail
    assert "Changes from version 1 to 2" in detail
    assert "Billing refactor started." in detail and "/summary/high_level" in detail
    assert dash.get(detail_url, {"from": "1", "to": "9"}).status_code == 404
    assert dash.get(detail_url, {"from": "x"}).status_code == 400


def test_it_filters_the_audit_log_by_actor_action_and_date(dash: Client, world: World) -> None:
    event = audit_record(
        workspace=world.workspace,
        actor=Actor(type="user", label="user:zoe"),
        action="thread.delete",
        target_type="thread",
        target_id="old-thread",
    )
    AuditEvent.objects.filter(pk=event.pk).update(created_at=timezone.now() - timedelta(days=10))
    url = reverse("dashboard:audit", args=[world.workspace.slug])

    def actions(**params: str) -> list[str]:
        return re.findall(r'<code class="action">([^<]+)</code>', text(dash.get(url, params)))

    assert actions(actor="zoe") == ["thread.delete"]
    assert set(actions(action="checkpoint.")) == {
        "checkpoint.fork",
        "checkpoint.ttl",
        "checkpoint.expire",
        "checkpoint.handoff",
    }
    assert actions(action="checkpoint") == []
    day = str((timezone.now() - timedelta(days=10)).date())
    assert actions(date_from=day, date_to=day) == ["thread.delete"]
    assert "thread.delete" not in actions(date_from=str(timezone.now().date()))


def test_it_previews_the_next_sweep(dash: Client, world: World) -> None:
    due = make_checkpoint(world.workspace, "sweepme", state={"n": 1}, ttl_seconds=60)
    checkpoint_set_ttl(checkpoint=due, actor=Actor.system(), ttl_seconds=1)
    Checkpoint.objects.filter(pk=due.pk).update(expires_at=timezone.now() - timedelta(seconds=5))
    page = text(dash.get(reverse("dashboard:retention", args=[world.workspace.slug])))
    counts = re.findall(r"data-rule-count>(\d+)<", page)
    assert counts[0] == "1"
    assert due.checkpoint_id[:20] in page


def test_it_lists_api_keys_without_their_secrets(dash: Client, world: World) -> None:
    from checkpoints.services.workspaces import api_key_create

    key, secret = api_key_create(workspace=world.workspace, name="ci-runner")
    page = text(dash.get(reverse("dashboard:keys", args=[world.workspace.slug])))
    assert "ci-runner" in page and key.prefix in page
    # The secret part after "cairn_<prefix>_" (itself URL-safe base64, so it may hold "_" too).
    hidden = secret.removeprefix(f"cairn_{key.prefix}_")
    assert len(hidden) > 20 and hidden != secret
    assert secret not in page and hidden not in page
