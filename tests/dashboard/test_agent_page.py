"""The agent page: its threads, checkpoints, handoffs taken and pending (the services' rule), errors and
tokens per day, and the API keys that wrote for it, by name; a pinned number of queries."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from checkpoints.dashboard.agent_activity import usage_tokens
from checkpoints.models import Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_handoff
from checkpoints.services.messages import messages_append
from checkpoints.services.workspaces import api_key_create
from tests.factories import make_checkpoint, make_pending_write

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
# the login, user and workspace; checkpoints, 4 handoff counts; threads; writers, keys; 5 chart series.
AGENT_PAGE_QUERIES = 3 + 5 + 1 + 2 + 5


def _bars(html: str, chart_id: str, series: str) -> dict[str, int]:
    chart = html[html.index(f'id="{chart_id}"') :]
    chart = chart[: chart.index("</svg>")]
    found = re.findall(rf'data-series="{series}" data-label="([^"]+)" data-value="(\d+)"', chart)
    return {label: int(value) for label, value in found}


def _count(html: str, name: str) -> str:
    found = re.search(rf'data-count="{name}">([^<]+)<', html)
    assert found is not None
    return found.group(1)


@pytest.fixture
def writer(workspace: Workspace) -> Workspace:
    key, _ = api_key_create(workspace=workspace, name="ingest bot")
    with time_machine.travel(datetime(2026, 11, 27, 9, 0, tzinfo=UTC), tick=False):
        source = make_checkpoint(workspace, "run", agent_id="planner")
        handed = checkpoint_handoff(source=source, target_agent_id="writer", actor=Actor.system("test"))
        failed = make_checkpoint(
            workspace,
            "run",
            agent_id="writer",
            written_by=f"key:{key.prefix}",
            metadata={"usage": {"input_tokens": 100, "output_tokens": 20}},
        )
        make_pending_write(failed, {"message": "boom"}, channel="__error__")
        make_pending_write(failed, 1, channel="messages")
    with time_machine.travel(NOW, tick=False):
        make_checkpoint(workspace, "other", agent_id="writer", metadata={"error": True})
        checkpoint_handoff(source=handed, target_agent_id="editor", actor=Actor.system("test"))
        message = {"role": "assistant", "content": "draft", "name": "writer", "usage": {"total_tokens": 7}}
        messages_append(workspace=workspace, thread_id="run", messages=[message])
    return workspace


def test_it_shows_an_agents_work_errors_and_tokens_per_day(
    dash: Client, writer: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:agent", args=[writer.slug, "writer"])
    with time_machine.travel(NOW, tick=False), django_assert_num_queries(AGENT_PAGE_QUERIES):
        html = dash.get(url).content.decode()
    # The handoff to the writer is taken (it saved after it, from another parent); its own is pending.
    assert (_count(html, "checkpoints"), _count(html, "taken"), _count(html, "pending")) == ("3", "1", "0")
    assert _count(html, "made") == "0 / 1"
    assert _bars(html, "agent-activity-chart", "checkpoints") == {"2026-11-27": 2, "2026-11-28": 1}
    assert _bars(html, "agent-activity-chart", "errors") == {"2026-11-27": 1, "2026-11-28": 1}
    assert _bars(html, "agent-tokens-chart", "saves") == {"2026-11-27": 120}
    assert _bars(html, "agent-tokens-chart", "messages") == {"2026-11-28": 7}
    threads = re.findall(r"/threads/([^/]+)/\">", html.split("data-agent-threads")[1].split("</table>")[0])
    assert threads == ["other", "run"] or threads == ["run", "other"]
    assert "<strong>ingest bot</strong>" in html


def test_an_unknown_agent_is_a_404_page(dash: Client, workspace: Workspace) -> None:
    response = dash.get(reverse("dashboard:agent", args=[workspace.slug, "nobody"]))
    assert response.status_code == 404 and "No agent &#x27;nobody&#x27;" in response.content.decode()


def test_the_handoffs_page_links_both_agents_to_their_pages(dash: Client, writer: Workspace) -> None:
    html = dash.get(reverse("dashboard:handoffs", args=[writer.slug])).content.decode()
    assert f'href="/dashboard/w/{writer.slug}/agents/planner/">planner</a> → ' in html


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"total_tokens": 9, "input_tokens": 1}, 9),
        ({"input_tokens": 4, "output_tokens": 5}, 9),
        ({"input_tokens": "4", "output_tokens": True}, 0),
        ({"total_tokens": -3}, 0),
        ([1, 2], 0),
        (None, 0),
    ],
)
def test_usage_tokens_reads_totals_and_ignores_what_is_not_a_count(usage: Any, tokens: int) -> None:
    assert usage_tokens(usage) == tokens
