"""Search everything in a workspace: a word across threads (highlighted, filtered by role, sender, thread
and date), checkpoints by agent, step name and metadata, each hit linking to its place in the timeline."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.models import Workspace
from checkpoints.services.messages import messages_append
from tests.dashboard.world import World, build_world, make_user
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

# the login, user and workspace, one page query, the count of what matched (capped).
SEARCH_QUERIES = 5


def _url(workspace: Workspace) -> str:
    return reverse("dashboard:search", args=[workspace.slug])


def _say(workspace: Workspace, thread_id: str, *messages: dict[str, Any]) -> None:
    messages_append(workspace=workspace, thread_id=thread_id, messages=list(messages))


def _hits(html: str) -> list[str]:
    """(thread #seq) of each message hit, in page order."""
    return re.findall(r'/threads/([^/]+)/timeline/\?message=(\d+)#m-\d+"', html)


def test_it_finds_a_word_across_threads_highlighted_and_linked_to_its_place(
    dash: Client, workspace: Workspace, other_workspace: Workspace
) -> None:
    _say(workspace, "alpha", {"role": "user", "content": "The invoice is late."})
    _say(workspace, "alpha", {"role": "assistant", "content": "Nothing to see."})
    _say(workspace, "beta", {"role": "assistant", "content": "I re-sent the <b>INVOICE</b> today."})
    _say(other_workspace, "gamma", {"role": "user", "content": "another tenant's invoice"})
    html = dash.get(_url(workspace), {"q": "invoice"}).content.decode()
    assert _hits(html) == [("beta", "1"), ("alpha", "1")]  # newest first, only this workspace
    assert "I re-sent the &lt;b&gt;<mark>INVOICE</mark>&lt;/b&gt; today." in html  # escaped, marked
    assert "The <mark>invoice</mark> is late." in html
    assert "tenant" not in html and "Nothing to see" not in html


def test_it_filters_messages_by_role_sender_thread_and_date(dash: Client, workspace: Workspace) -> None:
    _say(workspace, "alpha", {"role": "user", "content": "refund please"})
    _say(workspace, "alpha", {"role": "assistant", "name": "billing-bot", "content": "refund issued"})
    _say(workspace, "beta", {"role": "assistant", "name": "support-bot", "content": "refund denied"})
    search = dash.get(_url(workspace), {"q": "refund", "role": "assistant"}).content.decode()
    assert _hits(search) == [("beta", "1"), ("alpha", "2")]
    by_agent = dash.get(_url(workspace), {"q": "refund", "agent": "billing-bot"}).content.decode()
    assert _hits(by_agent) == [("alpha", "2")]
    by_thread = dash.get(_url(workspace), {"q": "refund", "thread": "alpha"}).content.decode()
    assert _hits(by_thread) == [("alpha", "2"), ("alpha", "1")]
    future = dash.get(_url(workspace), {"q": "refund", "date_from": "2999-01-01"}).content.decode()
    assert _hits(future) == [] and "No messages match." in future


def test_it_needs_words_to_search_messages(dash: Client, workspace: Workspace) -> None:
    _say(workspace, "alpha", {"role": "user", "content": "hello"})
    html = dash.get(_url(workspace)).content.decode()
    assert _hits(html) == [] and "Type one or more words" in html


def test_it_finds_checkpoints_by_agent_step_name_and_metadata(dash: Client, workspace: Workspace) -> None:
    make_checkpoint(
        workspace, "alpha", agent_id="planner", step_name="Plan Billing", metadata={"source": "input"}
    )
    make_checkpoint(workspace, "alpha", agent_id="coder", step_name="write code", metadata={"source": "loop"})
    make_checkpoint(
        workspace, "beta", agent_id="planner", step_name="replan", metadata={"source": "loop", "n": 2}
    )

    def found(**query: str) -> list[tuple[str, str]]:
        html = dash.get(_url(workspace), {"kind": "checkpoints", **query}).content.decode()
        return re.findall(
            r'<td><a href="[^"]+/threads/[^/]+/">([^<]+)</a></td>\s*<td class="agent">([^<]+)</td>', html
        )

    assert found() == [("beta", "planner"), ("alpha", "coder"), ("alpha", "planner")]
    assert found(agent="planner") == [("beta", "planner"), ("alpha", "planner")]
    assert found(q="PLAN") == [("beta", "planner"), ("alpha", "planner")]  # step name contains, any case
    assert found(metadata="source=loop") == [("beta", "planner"), ("alpha", "coder")]
    assert found(metadata='{"n": 2}') == [("beta", "planner")]
    assert found(metadata="n=2", thread="alpha") == []
    assert found(q="100%") == []  # LIKE wildcards are plain characters


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"kind": "checkpoints", "metadata": "{not json"}, "Not valid JSON"),
        ({"kind": "checkpoints", "metadata": "[1, 2]"}, "Give key=value or a JSON object"),
        ({"kind": "checkpoints", "metadata": "no-equals-sign"}, "Give key=value or a JSON object"),
        ({"kind": "checkpoints", "metadata": '{"k": "a\\u0000b"}'}, "NUL"),
        ({"q": " ".join(f"w{n}" for n in range(20))}, "more than 16 terms"),
        ({"kind": "everything"}, "Select a valid choice"),
        ({"q": "a\x00b"}, "Null characters are not allowed"),
    ],
)
def test_it_refuses_bad_input_on_the_form_never_with_a_500(
    dash: Client, workspace: Workspace, query: dict[str, str], error: str
) -> None:
    response = dash.get(_url(workspace), query)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert response.context["page"] is None


def test_it_refuses_a_forged_cursor_with_a_400(dash: Client, workspace: Workspace) -> None:
    response = dash.get(_url(workspace), {"q": "x", "cursor": "not-a-cursor"})
    assert response.status_code == 400 and b"cursor" in response.content


def test_it_pins_the_query_count_of_both_kinds(
    dash: Client, workspace: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    for n in range(60):
        _say(workspace, f"t-{n % 7}", {"role": "user", "content": f"status report {n}"})
        make_checkpoint(workspace, f"t-{n % 7}", agent_id="reporter", step_name="report")
    with django_assert_num_queries(SEARCH_QUERIES):
        messages = dash.get(_url(workspace), {"q": "report"}).content.decode()
    with django_assert_num_queries(SEARCH_QUERIES):
        checkpoints = dash.get(_url(workspace), {"kind": "checkpoints", "q": "report"}).content.decode()
    assert len(_hits(messages)) == 50 and 'rel="next"' in messages
    assert checkpoints.count('<td class="agent">reporter</td>') == 50 and 'rel="next"' in checkpoints
    assert 'data-result-count="60">60 messages found</p>' in messages
    assert 'data-result-count="60">60 checkpoints found</p>' in checkpoints


def test_it_never_shows_another_workspace_hits(
    client: Client, workspace: Workspace, other_workspace: Workspace
) -> None:
    world: World = build_world(workspace)
    _say(workspace, world.thread.thread_id, {"role": "user", "content": "SECRET-MARKER of A"})
    client.force_login(make_user("mallory", workspaces=(other_workspace,)))
    for query in (
        {"q": "SECRET-MARKER"},
        {"kind": "checkpoints", "agent": "planner"},
        {"kind": "checkpoints"},
    ):
        response = client.get(_url(other_workspace), query)
        html = response.content.decode()
        assert response.status_code == 200 and "of A" not in html and '<td class="agent">' not in html
        assert "No messages match." in html or "No checkpoints match." in html
    assert client.get(_url(workspace), {"q": "SECRET-MARKER"}).status_code == 404
