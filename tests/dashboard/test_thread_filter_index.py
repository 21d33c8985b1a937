"""The dashboard's thread text filter (id or name contains) is answered from indexes on PostgreSQL."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from checkpoints.dashboard.forms import ThreadFilterForm
from checkpoints.models import Thread, Workspace

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_it_matches_ids_or_names_through_both_trigram_indexes(workspace: Workspace) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO checkpoints_thread (workspace_id, thread_id, user_id, name, tags, metadata,"
            " scope, pinned, forked_from_checkpoint_id, forked_from_namespace, last_message_seq,"
            " last_summarized_seq, state_version, created_at, updated_at)"
            " SELECT %s, 'run-' || g, '', 'Conversation ' || g, '[]', '{}', '{}', false, '', '', 0, 0, 0,"
            " now(), now() FROM generate_series(1, 200000) g",
            [workspace.pk],
        )
        cursor.execute("ANALYZE checkpoints_thread")
    form = ThreadFilterForm(data={"q": "refund"})
    assert form.is_valid(), form.errors
    plan = json.dumps(
        json.loads(form.apply(Thread.objects.filter(workspace=workspace)).explain(format="json"))
    )
    # Both sides of the OR come from an index (a BitmapOr): no scan of 50,000 threads.
    assert "thread_id_trgm" in plan and "thread_name_trgm" in plan
    assert "Seq Scan" not in plan
