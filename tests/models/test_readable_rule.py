"""The readable rule (`checkpoints.models.readable.READABLE`) gives the same answer in every form it is built
into — the queryset (`live`), the static statements' SQL, a page's condition, a row in hand — on generated
rows, on the database the run uses; and the sweep's `due_for_tombstone` is exactly "not a tombstone and
not readable" (docs/architecture.md, "One definition per concept")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.models.readable import READABLE
from checkpoints.storage import hot_cursor, model_rows
from checkpoints.storage.checkpoint_pages import CheckpointPages
from checkpoints.storage.keyset import Seek
from checkpoints.storage.save_sql import LIVE

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
# Around `now`, to the microsecond: equality is where a strict and a loose comparison differ.
OFFSETS = [timedelta(0), timedelta(microseconds=1), timedelta(seconds=1), timedelta(days=3)]
MOMENTS = st.sampled_from([NOW + offset for offset in OFFSETS] + [NOW - offset for offset in OFFSETS[1:]])
ROWS = st.lists(
    st.tuples(st.none() | MOMENTS, st.booleans(), st.none() | MOMENTS),  # expired_at, pinned, expires_at
    min_size=1,
    max_size=8,
)
_ids = count()


def test_the_rule_reads_as_sql_on_the_row_aliased_c() -> None:
    expected = "(c.expired_at IS NULL) AND (c.pinned OR c.expires_at IS NULL OR c.expires_at > %(now)s)"
    assert READABLE.sql(Checkpoint, "c") == expected
    assert READABLE.sql(Checkpoint, "x", now_param="at").endswith("x.expires_at > %(at)s)")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, now=MOMENTS)
def test_every_form_of_readable_agrees_on_generated_rows(
    workspace: Workspace, rows: list[tuple[datetime | None, bool, datetime | None]], now: datetime
) -> None:
    thread = Thread.objects.create(workspace=workspace, thread_id=f"t{next(_ids)}")
    checkpoints = [
        Checkpoint.objects.create(
            workspace=workspace,
            thread=thread,
            checkpoint_id=f"c{n}",
            agent_id="a",
            checksum="x",
            expired_at=expired_at,
            pinned=pinned,
            expires_at=expires_at,
        )
        for n, (expired_at, pinned, expires_at) in enumerate(rows)
    ]
    in_hand = {c.pk for c in checkpoints if c.is_readable(now)}
    expected = {
        c.pk
        for c in checkpoints
        if c.expired_at is None and (c.pinned or c.expires_at is None or c.expires_at > now)
    }
    assert in_hand == expected, rows

    mine = Checkpoint.objects.filter(thread=thread)
    assert set(mine.live(now).values_list("pk", flat=True)) == expected
    with hot_cursor.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id FROM {model_rows.CHECKPOINT} c WHERE c.thread_id = %(thread)s AND {LIVE}",  # nosec B608 # names from the models; values bound
            {"thread": thread.pk, "now": model_rows.adapt_datetime(now)},
        )
        assert {row[0] for row in cursor.fetchall()} == expected
    page = CheckpointPages(workspace=workspace, conditions={"live": now}, payload=False, thread=thread)
    assert {c.pk for c in page.read(Seek(ordering=["-id"], position=None, limit=100))} == expected
    assert {c.pk for c in page.queryset()} == expected

    not_tombstones = {c.pk for c in checkpoints if c.expired_at is None}
    due = set(mine.due_for_tombstone(now).values_list("pk", flat=True))
    assert due == not_tombstones - expected
