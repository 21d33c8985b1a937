"""Messages over the API: batch append (seq, idempotency, order), list, filters, get, delete, bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection

from checkpoints.api.serializers.messages import MessageSerializer
from checkpoints.models import AuditEvent, Message, Thread
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

URL = "/api/v1/threads/t1/messages/"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def append(api: ApiClient, *messages: dict[str, Any], url: str = URL) -> list[dict[str, Any]]:
    response = api.post(url, {"messages": list(messages)})
    assert response.status_code == 201, response.json()
    return list(response.json()["results"])


def seqs(response: Any) -> list[int]:
    assert response.status_code == 200, response.json()
    return [m["seq"] for m in response.json()["results"]]


def test_it_appends_a_batch_creating_the_thread_with_gapless_seqs_and_increasing_times(
    api: ApiClient,
) -> None:
    with time_machine.travel(T0, tick=False):
        first = append(api, {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"})
        second = append(
            api,
            {
                "message_id": "m-3",
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "call-1", "type": "function", "function": {"name": "f"}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 7},
                "metadata": {"node": "planner"},
            },
            {"role": "tool", "content": "42", "tool_call_id": "call-1", "name": "f"},
        )
    assert [m["seq"] for m in first + second] == [1, 2, 3, 4]
    # Frozen clock, yet every message has its own instant, in seq order, across batches too.
    times = [m["created_at"] for m in first + second]
    assert times == sorted(times) and len(set(times)) == 4
    assert times[0] == "2026-03-01T12:00:00.000000Z"
    assert second[0] == {
        "thread_id": "t1",
        "message_id": "m-3",
        "seq": 3,
        "role": "assistant",
        "content": "",
        "content_blocks": None,
        "tool_calls": [{"id": "call-1", "type": "function", "function": {"name": "f"}}],
        "tool_call_id": None,
        "name": None,
        "usage": {"prompt_tokens": 5, "completion_tokens": 7},
        "metadata": {"node": "planner"},
        "created_at": "2026-03-01T12:00:00.000002Z",
    }
    assert set(MessageSerializer().fields) == set(second[0])
    assert len(first[0]["message_id"]) == 36  # UUIDv7
    assert Thread.objects.get(thread_id="t1").last_message_seq == 4


def test_it_retries_identical_messages_as_no_ops_returning_the_original_seq(api: ApiClient) -> None:
    batch: list[dict[str, Any]] = [
        {"message_id": "a", "role": "user", "content": "hello", "metadata": {"x": 1, "y": [1, 2]}},
        {"message_id": "b", "role": "assistant", "content": "hi"},
    ]
    original = append(api, *batch)
    retried = append(api, {**batch[0], "metadata": {"y": [1, 2], "x": 1}}, batch[1], {"role": "user"})
    assert [m["seq"] for m in retried] == [1, 2, 3]
    assert retried[:2] == original
    assert Message.objects.count() == 3


@pytest.mark.parametrize(
    "change",
    [
        {"content": "hello!"},
        {"role": "system"},
        {"metadata": {"x": 1.0}},  # 1 and 1.0 are different JSON
        {"metadata": {"x": True}},  # so are 1 and true (Python's == says otherwise)
        {"name": "alice"},
        {"content_blocks": [{"type": "text", "text": "hello"}]},
    ],
)
def test_it_refuses_a_known_message_id_with_other_content_and_stores_nothing_of_the_batch(
    api: ApiClient, change: dict[str, Any]
) -> None:
    original = {"message_id": "a", "role": "user", "content": "hello", "metadata": {"x": 1}}
    append(api, original)
    response = api.post(URL, {"messages": [{"role": "user", "content": "new"}, {**original, **change}]})
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "conflict"
    assert error["details"]["conflicts"] == [{"message_id": "a", "differing_fields": sorted(change)}]
    assert list(Message.objects.values_list("content", flat=True)) == ["hello"]
    assert Thread.objects.get(thread_id="t1").last_message_seq == 1


def test_it_keeps_message_ids_per_thread(api: ApiClient) -> None:
    append(api, {"message_id": "m1", "role": "user", "content": "in t1"})
    other = append(
        api, {"message_id": "m1", "role": "user", "content": "in t2"}, url="/api/v1/threads/t2/messages/"
    )
    assert other[0]["seq"] == 1
    assert api.get(f"{URL}m1/").json()["content"] == "in t1"
    assert api.get("/api/v1/threads/t2/messages/m1/").json()["content"] == "in t2"


def test_it_does_not_move_the_head_but_touches_the_thread(api: ApiClient) -> None:
    with time_machine.travel(T0, tick=False):
        head = make_checkpoint(api.workspace, "t1")
        api.patch("/api/v1/threads/t1/", {"ttl_seconds": 60})
        version = Thread.objects.get(thread_id="t1").state_version
    with time_machine.travel(T0 + timedelta(minutes=10), tick=False):
        append(api, {"role": "user", "content": "later"})
    thread = Thread.objects.get(thread_id="t1")
    assert thread.state_version == version
    assert thread.updated_at == T0 + timedelta(minutes=10)
    assert thread.expires_at == T0 + timedelta(minutes=11)
    assert api.get("/api/v1/threads/t1/").json()["head"] == head.checkpoint_id


def test_it_records_the_message_seq_on_later_checkpoints(api: ApiClient) -> None:
    append(api, {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"})
    assert make_checkpoint(api.workspace, "t1").message_seq == 2


def test_an_append_locks_reads_inserts_and_updates_the_thread_once(
    api: ApiClient, django_assert_num_queries: Any, django_capture_on_commit_callbacks: Any
) -> None:
    append(api, {"role": "user", "content": "first"})
    # The workspace asks for no summaries: the check after the commit costs no query.
    with django_assert_num_queries(6) as captured, django_capture_on_commit_callbacks(execute=True) as hooks:
        append(api, {"role": "user", "content": "second"})
    statements = [q["sql"].split()[0] for q in captured.captured_queries]
    # A savepoint here: the test runs in a transaction (served, BEGIN and COMMIT).
    assert statements == ["SAVEPOINT", "SELECT", "SELECT", "INSERT", "UPDATE", "RELEASE"]
    assert "last_message_seq" in captured.captured_queries[4]["sql"]
    assert "updated_at" in captured.captured_queries[4]["sql"]
    # After the commit: the summary check and, on PostgreSQL, the thread remembered for the next append.
    assert len(hooks) == (2 if connection.vendor == "postgresql" else 1)


def test_it_lists_in_seq_order_with_role_and_seq_filters_and_keyset_pages(
    api: ApiClient, django_assert_num_queries: Any
) -> None:
    append(api, *({"role": "user" if n % 2 else "assistant", "content": f"m{n}"} for n in range(1, 8)))
    assert seqs(api.get(URL)) == [1, 2, 3, 4, 5, 6, 7]
    assert seqs(api.get(URL, {"role": "user"})) == [1, 3, 5, 7]
    assert seqs(api.get(URL, {"after_seq": "2", "before_seq": "6"})) == [3, 4, 5]
    assert seqs(api.get(URL, {"after_seq": "5", "role": "assistant"})) == [6]
    seen: list[int] = []
    page = api.get(URL, {"limit": 3}).json()
    while True:
        seen += [m["seq"] for m in page["results"]]
        if not page["next"]:
            break
        page = api.get(page["next"]).json()
    assert seen == [1, 2, 3, 4, 5, 6, 7]
    with django_assert_num_queries(2):  # the thread, the page (the key is remembered)
        assert len(api.get(URL, {"limit": 50}).json()["results"]) == 7


def test_it_gets_and_deletes_one_message_with_an_audit_event(api: ApiClient) -> None:
    append(api, {"message_id": "keep", "role": "user"}, {"message_id": "drop", "role": "user"})
    assert api.get(f"{URL}drop/").json()["seq"] == 2
    assert api.delete(f"{URL}drop/").status_code == 204
    assert api.get(f"{URL}drop/").status_code == 404
    assert api.delete(f"{URL}drop/").status_code == 404
    event = AuditEvent.objects.get(action="message.delete")
    assert event.target_id == "t1/drop" and event.details == {"seq": 2}
    # seqs are never reused: the next append continues after the deleted one.
    assert append(api, {"role": "user"})[0]["seq"] == 3
    assert seqs(api.get(URL)) == [1, 3]


def test_it_searches_the_workspace_by_thread_user_and_role(
    api: ApiClient, other_api: ApiClient, django_assert_num_queries: Any
) -> None:
    append(api, {"role": "user", "content": "alpha one"}, url="/api/v1/threads/a/messages/?user_id=alice")
    append(api, {"role": "assistant", "content": "alpha two"}, url="/api/v1/threads/b/messages/?user_id=bob")
    append(other_api, {"role": "user", "content": "alpha elsewhere"})
    everything = api.get("/api/v1/messages/", {"search": "alpha"}).json()["results"]
    assert [(m["thread_id"], m["content"]) for m in everything] == [("b", "alpha two"), ("a", "alpha one")]
    assert [m["thread_id"] for m in api.get("/api/v1/messages/", {"user_id": "alice"}).json()["results"]] == [
        "a"
    ]
    assert [m["thread_id"] for m in api.get("/api/v1/messages/", {"thread_id": "b"}).json()["results"]] == [
        "b"
    ]
    assert [m["role"] for m in api.get("/api/v1/messages/", {"role": "user"}).json()["results"]] == ["user"]
    with django_assert_num_queries(1):  # the page (thread ids joined; the key is remembered)
        api.get("/api/v1/messages/", {"search": "alpha", "limit": "10"})


def test_it_appends_into_a_new_thread_owned_by_the_user_id(api: ApiClient) -> None:
    append(api, {"role": "user"}, url="/api/v1/threads/mine/messages/?user_id=alice")
    assert Thread.objects.get(thread_id="mine").user_id == "alice"
    append(api, {"role": "user"}, url="/api/v1/threads/mine/messages/?user_id=alice")
    stolen = api.post("/api/v1/threads/mine/messages/?user_id=bob", {"messages": [{"role": "user"}]})
    assert stolen.status_code == 404
    assert Message.objects.count() == 2


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({}, "role"),
        ({"role": "robot"}, "role"),
        ({"role": 1}, "role"),
        ({"role": "user", "content": 5}, "content"),
        ({"role": "user", "content": "nul\u0000"}, "content"),
        ({"role": "user", "content": "x" * (1024 * 1024 + 1)}, "content"),
        ({"role": "user", "message_id": "has space"}, "message_id"),
        ({"role": "user", "message_id": "x" * 129}, "message_id"),
        ({"role": "user", "content_blocks": {"type": "text"}}, "content_blocks"),
        ({"role": "user", "content_blocks": [{"text": "no type"}]}, "content_blocks"),
        ({"role": "user", "content_blocks": [{"type": "text", "text": 3}]}, "content_blocks"),
        ({"role": "user", "content_blocks": ["plain"]}, "content_blocks"),
        ({"role": "user", "content_blocks": [{"type": "text", "text": "a\u0000"}]}, "content_blocks"),
        ({"role": "user", "tool_calls": {"id": 1}}, "tool_calls"),
        ({"role": "user", "usage": [1]}, "usage"),
        ({"role": "user", "usage": {"k\u0000": 1}}, "usage"),
        ({"role": "user", "metadata": None}, "metadata"),
        ({"role": "user", "metadata": "x"}, "metadata"),
        ({"role": "user", "tool_call_id": ""}, "tool_call_id"),
        ({"role": "user", "name": 3}, "name"),
        ({"role": "user", "seq": 9}, "seq"),
        ({"role": "user", "created_at": "2026-01-01T00:00:00Z"}, "created_at"),
        ({"role": "user", "search_text": "x"}, "search_text"),
    ],
)
def test_it_refuses_invalid_messages_with_400_and_stores_nothing(
    api: ApiClient, message: dict[str, Any], field: str
) -> None:
    response = api.post(URL, {"messages": [{"role": "user", "content": "fine"}, message]})
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in error["details"]["fields"]["messages"]["1"]
    assert not Message.objects.exists() and not Thread.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"messages": []},
        {"messages": [{"role": "user"}] * 1001},
        {"messages": {"role": "user"}},
        {"messages": "hi"},
        {"messages": [{"role": "user"}], "extra": 1},
        {},
        [{"role": "user"}],
    ],
)
def test_it_refuses_bad_batches(api: ApiClient, body: Any) -> None:
    response = api.post(URL, body)
    assert response.status_code == 400, response.json()
    assert not Message.objects.exists()


def test_it_accepts_exactly_1000_messages_in_one_batch(api: ApiClient) -> None:
    results = append(api, *({"role": "user", "content": f"n{n}"} for n in range(1000)))
    assert [m["seq"] for m in results] == list(range(1, 1001))


def test_it_refuses_a_message_id_repeated_within_a_batch(api: ApiClient) -> None:
    response = api.post(URL, {"messages": [{"message_id": "a", "role": "user"}] * 2})
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"message_ids": ["a"]}


def test_it_refuses_hostile_bodies_and_parameters(api: ApiClient) -> None:
    raw = [
        b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}',  # invalid UTF-8
        b'{"messages": [{"role": "user", "role": "system"}]}',  # duplicate key
        b'{"messages": [{"role": "user", "content": NaN}]}',
        ('{"messages": [{"role": "user", "metadata": ' + '{"a": ' * 200 + "1" + "}" * 201 + "]}").encode(),
    ]
    for body in raw:
        response = api.generic("POST", URL, body, content_type="application/json")  # type: ignore[arg-type]
        assert response.status_code == 400, body[:40]
        assert response.json()["error"]["code"] == "validation_error"
    append(api, {"role": "user"})
    for query in ({"after_seq": "x"}, {"after_seq": "-1"}, {"before_seq": str(2**64)}, {"role": "robot"}):
        assert api.get(URL, query).status_code == 400, query
    assert api.get(URL, {"limit": "0"}).status_code == 400  # never "everything"
    assert api.get(f"{URL}?search=a%00b").status_code == 400
    assert Message.objects.count() == 1


def test_it_answers_404_across_workspaces_for_messages(api: ApiClient, other_api: ApiClient) -> None:
    append(api, {"message_id": "m1", "role": "user", "content": "secret"})
    assert other_api.get(f"{URL}m1/").status_code == 404
    assert other_api.delete(f"{URL}m1/").status_code == 404
    assert other_api.get("/api/v1/messages/", {"search": "secret"}).json()["results"] == []
    assert other_api.get("/api/v1/messages/", {"thread_id": "t1"}).json()["results"] == []
    assert Message.objects.count() == 1


def test_it_renders_unicode_as_is(api: ApiClient) -> None:
    append(api, {"role": "user", "content": "決定 قرار 🎉"})
    response = api.get(URL)
    assert "決定 قرار 🎉".encode() in response.content
    assert json.loads(response.content)["results"][0]["content"] == "決定 قرار 🎉"


def test_it_refuses_a_body_over_the_limit_with_413_before_storing_anything(
    api: ApiClient, settings: Any
) -> None:
    settings.CAIRN_MAX_BODY_BYTES = 2048
    response = api.post(URL, {"messages": [{"role": "user", "content": "x" * 4096}]})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert not Message.objects.exists()
