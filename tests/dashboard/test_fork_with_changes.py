"""Fork with changes: the state edited as JSON (checked inline with the API's rules) and a choice of the
messages carried over, through the one fork service; the new thread says where it came from."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.exceptions import ValidationFailed
from checkpoints.integrity import canonical_json
from checkpoints.models import AuditEvent, Checkpoint, Message, Thread
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoint_reads import ensure_intact
from checkpoints.services.threads import thread_fork
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db

# session + user + workspace + the checkpoint with its thread + the messages to pick from.
FORK_PAGE_QUERIES = 5


def fork_url(world: World) -> str:
    url = reverse(
        "dashboard:checkpoint-fork", args=[world.workspace.slug, "run-1", world.step2.checkpoint_id]
    )
    return f"{url}?ns="


def head(thread_id: str) -> Checkpoint:
    checkpoint = Checkpoint.objects.get(thread__thread_id=thread_id)
    checkpoint.thread = Thread.objects.get(thread_id=thread_id)
    return checkpoint


def test_the_form_offers_the_state_and_the_messages(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    with django_assert_num_queries(FORK_PAGE_QUERIES):
        html = dash.get(fork_url(world)).content.decode()
    textarea = html.split('name="state"')[1].split("</textarea>")[0]
    assert json.loads(textarea.split(">", 1)[1].replace("&quot;", '"')) == json.loads(world.step2.state or "")
    messages = Message.objects.filter(thread=world.thread, seq__lte=world.step2.message_seq)
    assert html.count('name="messages"') == messages.count() == 3
    assert "#3 tool: pytest: 42 passed" in html and "All 3" in html


def test_it_forks_with_an_edited_state_and_chosen_messages(dash: Client, world: World) -> None:
    first, _, third = Message.objects.filter(thread=world.thread).order_by("seq")[:3]
    edited = {"goal": "refactor billing", "todo": ["ship"], "done": ["split", "test"], "note": "édité"}
    response = dash.post(
        fork_url(world),
        {
            "thread_id": "what-if",
            "state": json.dumps(edited, indent=4),
            "carry": "chosen",
            "messages": [first.message_id, third.message_id],
        },
    )
    assert response.status_code == 302 and response["Location"] == "/dashboard/w/acme/threads/what-if/"
    fork = head("what-if")
    assert json.loads(fork.state or "") == edited and fork.checksum != world.step2.checksum
    ensure_intact(fork)  # signed for its new state and thread
    assert list(Message.objects.filter(thread=fork.thread).order_by("seq").values_list("seq", flat=True)) == [
        1,
        3,
    ]
    event = AuditEvent.objects.get(action="checkpoint.fork", target_id="what-if")
    assert event.actor_label == "user:alice"
    assert (event.details["state_edited"], event.details["messages"], event.details["messages_left_out"]) == (
        True,
        2,
        1,
    )
    assert event.details["left_out_seqs"] == [2]
    page = dash.get(response["Location"]).content.decode()
    assert "Forked into thread what-if (state edited; 2 messages carried)." in page
    source_link = f'href="/dashboard/w/acme/threads/run-1/checkpoints/{world.step2.checkpoint_id}/?ns="'
    assert "Forked from" in page and source_link in page
    # The source is untouched.
    world.step2.refresh_from_db()
    assert json.loads(world.step2.state or "")["todo"] == []


def test_an_unchanged_form_forks_as_a_plain_fork(dash: Client, world: World) -> None:
    form = dash.get(fork_url(world)).content.decode()
    state = form.split('name="state"')[1].split("</textarea>")[0].split(">", 1)[1].replace("&quot;", '"')
    response = dash.post(fork_url(world), {"thread_id": "same", "state": state, "carry": "all"})
    assert response.status_code == 302
    fork = head("same")
    assert fork.state == world.step2.state and fork.checksum != ""
    assert Message.objects.filter(thread=fork.thread).count() == 3
    event = AuditEvent.objects.get(action="checkpoint.fork", target_id="same")
    assert "state_edited" not in event.details and "messages_left_out" not in event.details


def test_it_carries_no_messages_when_asked(dash: Client, world: World) -> None:
    response = dash.post(fork_url(world), {"thread_id": "bare", "carry": "none"})
    assert response.status_code == 302
    assert not Message.objects.filter(thread__thread_id="bare").exists()
    fork = Thread.objects.get(thread_id="bare")
    assert fork.last_message_seq == world.step2.message_seq  # later appends continue after the source's seqs


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ('{"goal": ', "Malformed JSON"),
        ('{"a": 1, "a": 2}', "Duplicate key"),
        ('{"n": NaN}', "not valid JSON"),
        ("[" * 200 + "]" * 200, "nests deeper"),
    ],
)
def test_it_refuses_bad_state_inline_and_forks_nothing(
    dash: Client, world: World, state: str, message: str
) -> None:
    response = dash.post(fork_url(world), {"thread_id": "bad", "state": state})
    html = response.content.decode()
    assert response.status_code == 400
    assert message in html.split('data-error-for="state">')[1].split("</div>")[0]
    assert not Thread.objects.filter(thread_id="bad").exists()


def test_it_refuses_messages_that_are_not_up_to_the_checkpoint(dash: Client, world: World) -> None:
    response = dash.post(fork_url(world), {"thread_id": "x", "carry": "chosen", "messages": ["nope"]})
    assert response.status_code == 400 and 'data-error-for="messages"' in response.content.decode()
    with pytest.raises(ValidationFailed) as refused:
        thread_fork(source=world.thread, actor=Actor.system(), checkpoint=world.root, message_ids=["nope"])
    assert refused.value.details == {"message_ids": ["nope"]}
    assert not Thread.objects.filter(thread_id="x").exists()


def test_the_service_refuses_a_state_it_cannot_store(world: World) -> None:
    with pytest.raises(ValidationFailed):
        thread_fork(source=world.thread, actor=Actor.system(), checkpoint=world.root, state={1j: "x"})
    fork = thread_fork(
        source=world.thread,
        actor=Actor.system(),
        checkpoint=world.root,
        state={"b": 2, "a": 1},
        thread_id="s",
    )
    assert head(fork.thread_id).state == canonical_json({"a": 1, "b": 2})


def test_it_records_the_reason_and_the_paths_of_the_edited_values(dash: Client, world: World) -> None:
    edited = json.loads(world.step2.state or "") | {"goal": "refund 50 EUR", "approved_by": "ops"}
    response = dash.post(
        fork_url(world),
        {
            "thread_id": "fixed",
            "state": json.dumps(edited),
            "carry": "all",
            "reason": "refund was 10x too high",
        },
    )
    assert response.status_code == 302
    event = AuditEvent.objects.get(action="checkpoint.fork", target_id="fixed")
    assert event.details["reason"] == "refund was 10x too high"
    assert sorted(event.details["changed_paths"]) == ["/approved_by", "/goal"]


@pytest.mark.parametrize("reason", ["nul\x00byte", "x" * 501])
def test_it_refuses_a_reason_with_a_nul_byte_or_too_long(dash: Client, world: World, reason: str) -> None:
    response = dash.post(fork_url(world), {"thread_id": "bad-reason", "carry": "all", "reason": reason})
    assert response.status_code == 400
    assert 'data-error-for="reason"' in response.content.decode()
    assert not Thread.objects.filter(thread_id="bad-reason").exists()
