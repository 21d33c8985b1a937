"""A page of a thread's messages read by its static statement (`MessagePages.read`) is the page its queryset
gives: the same messages in the same order with the same fields loaded (the search text deferred), from the
start and from a cursor's position, both ways, on both backends; another thread's messages never appear. On
PostgreSQL the statement is a seek on `message_unique_seq`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from checkpoints.api.pagination import queryset_rows
from checkpoints.models import Message, Thread, Workspace
from checkpoints.services.messages import MessagePages, _message_page_sql, messages_append
from checkpoints.storage.keyset import Seek
from tests.factories import WorkspaceFactory

pytestmark = pytest.mark.django_db


def _append(workspace: Workspace, thread_id: str, count: int) -> None:
    for start in range(0, count, 4):  # several batches: seqs from several appends
        batch = [
            {"role": "tool" if n % 3 else "user", "content": f"{thread_id} {n}", "metadata": {"n": n}}
            for n in range(start, min(count, start + 4))
        ]
        messages_append(workspace=workspace, thread_id=thread_id, messages=batch)


@pytest.fixture
def thread(workspace: Workspace) -> Thread:
    """A thread of 11 messages beside another thread of the workspace and one of the same id elsewhere."""
    _append(workspace, "t1", 11)
    _append(workspace, "t2", 5)
    _append(WorkspaceFactory.create(slug="elsewhere"), "t1", 6)
    return Thread.objects.get(workspace=workspace, thread_id="t1")


def _seen(message: Message) -> dict[str, Any]:
    """Every field as loaded (a deferred one as such)."""
    return {f.attname: message.__dict__.get(f.attname, "<deferred>") for f in Message._meta.concrete_fields}


@pytest.mark.parametrize("ordering", [["seq"], ["-seq"]])
@pytest.mark.parametrize("limit", [1, 3, 100])
def test_a_static_page_is_its_querysets_page(thread: Thread, ordering: list[str], limit: int) -> None:
    pages = MessagePages(thread)
    everything = queryset_rows(pages.queryset(), Seek(ordering, None, 1000))
    assert sorted(m.seq for m in everything) == list(range(1, 12))
    for position in [None, [1], [6], [11], [12]]:
        seek = Seek(ordering, position, limit)
        expected = [_seen(m) for m in queryset_rows(pages.queryset(), seek)]
        assert [_seen(m) for m in pages.read(seek)] == expected, (position, ordering)


def test_a_static_page_leaves_the_search_text_deferred(thread: Thread) -> None:
    (message,) = MessagePages(thread).read(Seek(["seq"], [2], 1))
    assert message.seq == 3 and message.get_deferred_fields() == {"search_text"}
    assert message.metadata == {"n": 2} and message.content == "t1 2"


@pytest.mark.postgres
def test_a_page_is_a_seek_on_the_threads_seq_index(workspace: Workspace, thread: Thread) -> None:
    """Over a few thousand analysed messages of 40 threads, page 1 and a later page read the thread's rows
    through `message_unique_seq` (in its order: no sort), never the whole table."""
    threads = [Thread.objects.create(workspace=workspace, thread_id=f"busy-{t}") for t in range(40)]
    Message.objects.bulk_create(
        Message(thread=busy, seq=seq, message_id=f"m-{seq}", role="user", content="x" * 80)
        for seq in range(1, 101)
        for busy in threads
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Message._meta.db_table}")
        for after in (False, True):
            sql = _message_page_sql(("seq",), after=after)
            bound = sql % {"thread": threads[7].pk, "limit": 21, "seek_0": 40}
            cursor.execute(f"EXPLAIN (FORMAT JSON) {bound}")
            plan = cursor.fetchone()[0]
            dump = json.dumps(plan if isinstance(plan, list) else json.loads(plan))
            assert '"Index Name": "message_unique_seq"' in dump, dump
            assert '"Seq Scan"' not in dump and '"Sort"' not in dump, dump
