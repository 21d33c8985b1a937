"""What ran at each step: nodes, status, time since the previous step and tokens, on the timeline, the tree
and the checkpoint page, in a fixed number of queries (docs/dashboard.md, "What ran")."""

from __future__ import annotations

import base64
import pickle
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from langchain_core.messages import AIMessage

from checkpoints.dashboard.steps import step_summaries, usage_in, usage_of
from checkpoints.dashboard.written_values import readable
from checkpoints.models import PendingWrite, Workspace
from checkpoints.models.value import unpack_writes
from checkpoints.packing import is_packed
from tests.dashboard.refund_run import CODEC, build_refund_run
from tests.dashboard.test_timeline import TIMELINE_QUERIES
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

# The run's message and exception writes are stored packed (docs/storage.md): one query reads their parts.
RUN_QUERIES = TIMELINE_QUERIES + 1


def test_it_names_the_nodes_the_failure_the_gap_and_the_tokens(workspace: Workspace) -> None:
    run = build_refund_run(workspace)
    steps = step_summaries([run.start, run.asked, run.answered])
    assert steps[run.asked.pk].nodes == ["__start__"]
    answered = steps[run.answered.pk]
    assert answered.nodes == ["agent"]
    assert (answered.status, answered.status_node) == ("error", "pay")
    assert answered.status_text == "ValueError('refund above limit')"
    assert answered.since_text == "+2.5 s"
    assert steps[run.asked.pk].since_text == "+40 ms"
    assert answered.usage is not None
    assert (answered.usage.input_tokens, answered.usage.output_tokens, answered.usage.total_tokens) == (
        120,
        30,
        150,
    )
    assert steps[run.start.pk].status == "ok"
    assert steps[run.start.pk].since_previous is None
    assert steps[run.start.pk].usage is None


def test_it_shows_an_interrupt_with_its_value(workspace: Workspace) -> None:
    run = build_refund_run(workspace, interrupted=True)
    answered = step_summaries([run.answered])[run.answered.pk]
    assert answered.status == "interrupted"
    assert answered.status_text == "Interrupt: approve 500 EUR?"


def test_it_reads_step_name_and_usage_of_other_saves(workspace: Workspace) -> None:
    first = make_checkpoint(workspace, "plain", step_name="lookup")
    second = make_checkpoint(
        workspace,
        "plain",
        step_name="decide",
        metadata={"usage": {"input_tokens": 7, "output_tokens": 3}},
    )
    steps = step_summaries([first, second])
    assert steps[second.pk].nodes == ["decide"]
    usage = steps[second.pk].usage
    assert usage is not None
    assert usage.total_tokens == 10
    assert steps[first.pk].usage is None


def test_it_never_unpickles_a_stored_value() -> None:
    class Boom:
        def __reduce__(self) -> Any:
            return (exec, ("raise SystemExit('executed')",))

    data = base64.b64encode(pickle.dumps(Boom())).decode()
    shown = readable({"__cairn_type__": "x.Boom", "serde": "pickle", "data": data, "size": 1})
    assert shown == f"(x.Boom: pickle value of {len(base64.b64decode(data))} bytes, not decoded)"
    unreadable = {"__cairn_type__": "x.Y", "serde": "msgpack", "data": "!!"}
    assert readable(unreadable) == "(x.Y: unreadable msgpack value)"
    assert readable(CODEC.encode(ValueError("no"))) == "ValueError('no')"


def test_it_shows_what_ran_on_the_timeline_in_a_fixed_number_of_queries(
    dash: Client, workspace: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    run = build_refund_run(workspace)
    url = reverse("dashboard:thread-timeline", args=[workspace.slug, "refund-run"])
    with django_assert_num_queries(RUN_QUERIES):
        html = dash.get(url).content.decode()
    entry = re.search(rf'id="c-{run.answered.pk}">(.*?)</li>', html, re.S)
    assert entry is not None
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", entry.group(1)))
    assert "ran agent" in text
    assert 'data-step-status="error"' in entry.group(1)
    assert "in pay: ValueError(&#x27;refund above limit&#x27;)" in text
    assert "120 in · 30 out · 150 tokens" in text
    assert "+2.5 s" in text
    for step in range(2, 30):
        make_checkpoint(workspace, "refund-run", step_index=step, step_name="loop", framework="langgraph")
    with django_assert_num_queries(RUN_QUERIES):
        assert dash.get(url).status_code == 200


def test_it_shows_what_ran_on_the_tree_and_the_checkpoint_page(dash: Client, workspace: Workspace) -> None:
    run = build_refund_run(workspace)
    thread_html = dash.get(reverse("dashboard:thread", args=[workspace.slug, "refund-run"])).content.decode()
    assert thread_html.count('data-step-status="error"') == 1
    assert "150 tokens" in thread_html
    url = reverse("dashboard:checkpoint", args=[workspace.slug, "refund-run", run.answered.checkpoint_id])
    page = dash.get(url + "?ns=").content.decode()
    what_ran = re.search(r"<dt>What ran</dt><dd>(.*?)</dd>", page, re.S)
    assert what_ran is not None
    assert "<code>agent</code>" in what_ran.group(1)
    assert "refund above limit" in what_ran.group(1)


def test_it_shows_what_ran_from_writes_stored_whole(dash: Client, workspace: Workspace) -> None:
    """Rows written before values were packed (2026-12-03) hold the whole text."""
    build_refund_run(workspace)
    writes = list(PendingWrite.objects.all())
    assert "messages" in {w.channel for w in writes if is_packed(w.value)}  # the reply, with its usage
    unpack_writes(writes, workspace.pk)
    for write in writes:
        write.size_bytes = None
    PendingWrite.objects.bulk_update(writes, ["value", "size_bytes"])
    assert not any(is_packed(value) for value in PendingWrite.objects.values_list("value", flat=True))
    thread_html = dash.get(reverse("dashboard:thread", args=[workspace.slug, "refund-run"])).content.decode()
    assert thread_html.count('data-step-status="error"') == 1
    assert "150 tokens" in thread_html


def test_it_reads_the_usage_of_a_message_stored_through_the_serializer() -> None:
    message = AIMessage(
        "ok",
        additional_kwargs={"at": datetime(2026, 11, 28, tzinfo=UTC)},  # not JSON: stored as msgpack
        usage_metadata={"input_tokens": 4, "output_tokens": 2, "total_tokens": 6},
    )
    stored = CODEC.encode([message])
    assert "data" in stored[0]
    assert usage_in(readable(stored)) == usage_of({"input_tokens": 4, "output_tokens": 2})
