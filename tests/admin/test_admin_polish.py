"""Admin lists: messages found by words of their content (through the API search's index), times to the
second and durations in human units; tenancy holds for the content search."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from checkpoints.models import Membership, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.messages import messages_append
from checkpoints.services.retention import retention_policy_update
from checkpoints.services.workspaces import api_key_create, api_key_revoke
from tests.dashboard.world import World, make_user

pytestmark = pytest.mark.django_db

MESSAGES = reverse("admin:checkpoints_message_changelist")
STAMPED = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC")


def listed(html: str) -> list[tuple[str, str]]:
    """(seq, thread id) of every listed message."""
    return re.findall(
        r'<th class="field-seq"><a href="[^"]+">(\d+)</a></th>'
        r'<td class="field-thread_link"><a [^>]+>([^<]+)</a>',
        html,
    )


def test_it_finds_messages_by_words_of_their_content(admin_client: Client, world: World) -> None:
    html = admin_client.get(MESSAGES, {"q": "INVOICES split"}).content.decode()
    # "We decided to split invoices from payments." (case-folded, any order), and its copy in the fork.
    assert sorted(listed(html)) == [("2", "run-1"), ("2", "run-1-fork")]
    assert (
        admin_client.get(MESSAGES, {"q": '"payments split"'}).content.decode().count('class="field-seq"') == 0
    )
    by_id = admin_client.get(MESSAGES, {"q": "run-1-fork"}).content.decode()  # exact thread ids still work
    assert sorted(listed(by_id)) == [("1", "run-1-fork"), ("2", "run-1-fork")]
    assert "words of the content" in html


def test_it_refuses_an_over_long_search_without_a_500(admin_client: Client, world: World) -> None:
    response = admin_client.get(MESSAGES, {"q": "x" * 5000})
    assert response.status_code == 302 and "e=1" in response["Location"]


def test_the_content_search_stays_within_the_staff_members_workspaces(
    client: Client, world: World, other_workspace: Workspace
) -> None:
    messages_append(
        workspace=other_workspace,
        thread_id="secret",
        messages=[{"role": "user", "content": "split invoices"}],
    )
    staff = make_user("carol", workspaces=(world.workspace,))
    staff.user_permissions.add(Permission.objects.get(codename="view_message"))
    client.force_login(staff)
    html = client.get(MESSAGES, {"q": "split invoices"}).content.decode()
    assert sorted(listed(html)) == [("2", "run-1"), ("2", "run-1-fork")] and "secret" not in html


def test_it_shows_times_to_the_second_and_durations_in_human_units(
    admin_client: Client, world: World
) -> None:
    retention_policy_update(
        workspace=world.workspace,
        actor=Actor.system("t"),
        default_ttl_seconds=2_592_000,
        thread_idle_ttl_seconds=7_500,
    )
    workspaces = admin_client.get(reverse("admin:checkpoints_workspace_changelist")).content.decode()
    assert '<td class="field-default_ttl_seconds">30 days</td>' in workspaces
    assert '<td class="field-thread_idle_ttl_seconds">2 h 5 min</td>' in workspaces
    assert STAMPED.search(workspaces)
    for name in ("thread", "checkpoint", "message", "job", "auditevent", "medallion"):
        page = admin_client.get(reverse(f"admin:checkpoints_{name}_changelist")).content.decode()
        cells = re.findall(r'<t[dh] class="field-(\w+_at)">(.*?)</t[dh]>', page)
        assert cells, name
        for field, cell in cells:
            assert cell == "-" or STAMPED.search(cell), (name, field, cell)
    # Sorting by a time column still works (the column keeps the field's ordering).
    assert admin_client.get(reverse("admin:checkpoints_thread_changelist"), {"o": "-8"}).status_code == 200


def test_membership_admin_is_unchanged(
    admin_client: Client, world: World, other_workspace: Workspace
) -> None:
    user = make_user("dave")
    Membership.objects.create(workspace=other_workspace, user=user)
    html = admin_client.get(reverse("admin:checkpoints_membership_changelist")).content.decode()
    assert "dave" in html and STAMPED.search(html)


def test_the_yes_no_filters_split_the_rows(admin_client: Client, world: World) -> None:
    def first_column(url: str, field: str, **query: str) -> set[str]:
        html = admin_client.get(url, query).content.decode()
        return set(re.findall(rf'<th class="field-{field}"><a [^>]*>([^<]+)</a>', html))

    threads = reverse("admin:checkpoints_thread_changelist")
    assert first_column(threads, "thread_id", forked="yes") == {"run-1-fork"}
    assert "run-1" in first_column(threads, "thread_id", forked="no") - {"run-1-fork"}
    assert "run-1-fork" not in first_column(threads, "thread_id", forked="no")

    revoked_key, _ = api_key_create(workspace=world.workspace, name="retired")
    api_key_revoke(api_key=revoked_key, actor=Actor.system())
    api_key_create(workspace=world.workspace, name="in-use")
    keys = reverse("admin:checkpoints_apikey_changelist")
    assert first_column(keys, "name", revoked="yes") == {"retired"}
    assert "in-use" in first_column(keys, "name", revoked="no")
    assert "retired" not in first_column(keys, "name", revoked="no")
