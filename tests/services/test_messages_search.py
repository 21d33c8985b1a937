"""The search normal form, query parsing, and the indexes each database answers search from."""

from __future__ import annotations

import pytest
from django.db import connection

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Message, Thread
from checkpoints.services.messages import messages_append
from checkpoints.services.search import fold, message_search_text, messages_matching, parse_search_query
from tests.factories import WorkspaceFactory


def test_it_folds_case_width_and_whitespace_but_keeps_accents() -> None:
    assert fold("  Straße\tDÉCISION  ") == "strasse décision"
    assert fold("\uff21\uff22\uff23\uff11") == "abc1"  # full-width letters and digit (NFKC)
    assert fold("e\u0301") == "é"  # combining accent composed
    assert fold("décision") != fold("decision")


def test_it_builds_search_text_from_content_and_text_blocks_only() -> None:
    blocks = [
        {"type": "text", "text": "Hello"},
        {"type": "image", "url": "x.png"},
        {"type": "reasoning", "text": "Because"},
        {"type": "text", "text": 5},
        "not a block",
    ]
    assert message_search_text("Main  TEXT", blocks) == "main text\nhello\nbecause"
    assert message_search_text("", None) == ""


def test_it_parses_terms_and_quoted_phrases() -> None:
    assert parse_search_query('  Alpha "Beta  Gamma" alpha  ') == ["alpha", "beta gamma"]
    assert parse_search_query('"role"') == ["role"]
    assert parse_search_query('{"role":') == ['{"role":']
    assert parse_search_query("   ") == []
    with pytest.raises(ValidationFailed):
        parse_search_query("x" * 513)
    with pytest.raises(ValidationFailed):
        parse_search_query(" ".join(str(n) for n in range(17)))


@pytest.mark.django_db
def test_it_stores_the_folded_text_and_size_on_append() -> None:
    workspace = WorkspaceFactory.create()
    [message] = messages_append(
        workspace=workspace,
        thread_id="t",
        messages=[
            {
                "role": "user",
                "content": "Ça va",
                "content_blocks": [{"type": "text", "text": "B"}],
                "metadata": {"k": "é"},
                "name": "al",
            }
        ],
    )
    message.refresh_from_db()
    assert message.search_text == "ça va\nb"
    expected = (
        len("Ça va".encode()) + len(b"al") + len('[{"text":"B","type":"text"}]') + len('{"k":"é"}'.encode())
    )
    assert message.size_bytes == expected


@pytest.mark.django_db
def test_it_answers_sqlite_searches_from_the_fts5_trigram_table_kept_in_sync_by_triggers() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's FTS5 fallback")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'checkpoints_message'"
        )
        triggers = {row[0] for row in cursor.fetchall()}
    # A later migration that rebuilds checkpoints_message on SQLite drops these: it must recreate them.
    assert triggers == {f"checkpoints_message_fts_{op}" for op in ("insert", "delete", "update")}
    workspace = WorkspaceFactory.create()
    messages_append(workspace=workspace, thread_id="t", messages=[{"role": "user", "content": "décision"}])
    queryset = messages_matching(Message.objects.all(), "décision")
    assert "checkpoints_message_fts MATCH" in str(queryset.query)
    assert [m.content for m in queryset] == ["décision"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM checkpoints_message_fts WHERE checkpoints_message_fts MATCH ?", ['"cisi"']
        )
        assert cursor.fetchone()[0] == 1
    Message.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM checkpoints_message_fts WHERE checkpoints_message_fts MATCH ?", ['"cisi"']
        )
        assert cursor.fetchone()[0] == 0


@pytest.mark.postgres
@pytest.mark.django_db
def test_it_answers_postgresql_searches_from_the_trigram_gin_index() -> None:
    workspace = WorkspaceFactory.create()
    messages_append(
        workspace=workspace, thread_id="t", messages=[{"role": "user", "content": "決定 décision"}]
    )
    queryset = messages_matching(Message.objects.all(), "décision 決定")
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        # A tiny table is scanned whatever the indexes; forbid that to see which index the query can use.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "message_search_trgm" in plan
    assert [m.content for m in queryset] == ["決定 décision"]


@pytest.mark.postgres
@pytest.mark.django_db
def test_it_answers_the_thread_name_filter_from_a_trigram_index() -> None:
    sql, params = Thread.objects.filter(name__icontains="paris").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "thread_name_trgm" in plan
