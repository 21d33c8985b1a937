"""A save on PostgreSQL outside a transaction names, without sending them, the parts its process sent within a
quarter of the grace period; its statement writes only if they are all still stored and it runs within that
quarter period of the save's start (docs/storage.md). Here that memo is used, outlived and made wrong, and
each time the checkpoint must come back whole."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from checkpoints.models import StoredValue, Workspace
from checkpoints.packing import digests
from checkpoints.services.checkpoints import checkpoint_save
from checkpoints.storage import save_sql, stored_values
from tests.concurrency.test_optimistic_save import statements
from tests.conftest import POSTGRES_PART_ON_AND_OFF, ApiClient
from tests.storage.test_stored_values import chat, restore, save, stored_state_in

pytestmark = POSTGRES_PART_ON_AND_OFF
PART = "sent_parts"  # run on and off: checkpoints.parts

GRACE = timedelta(seconds=settings.CAIRN_VALUE_GRACE_SECONDS)


@contextmanager
def parts_of_each_insert(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[save_sql.Parts]]:
    """The `Parts` each checkpoint insert is given, in order."""
    seen: list[save_sql.Parts] = []
    insert = save_sql.insert_checkpoint

    def recording(checkpoint: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["parts"])
        return insert(checkpoint, **kwargs)

    monkeypatch.setattr(save_sql, "insert_checkpoint", recording)
    yield seen
    monkeypatch.setattr(save_sql, "insert_checkpoint", insert)


def parts_named(thread: str, checkpoint_id: str) -> set[bytes]:
    return digests([stored_state_in(thread, checkpoint_id)])


def small_save(api: ApiClient, thread: str) -> None:
    """A save too small to be packed: the thread exists, and this process made its last save."""
    save(api, {"n": 0}, thread=thread)


@pytest.mark.needs_part
def test_a_save_sends_only_the_parts_its_process_has_not_sent_lately(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = save(api, chat(40))
    with parts_of_each_insert(monkeypatch) as inserts, statements() as seen:
        second = save(api, chat(41))
    (parts,) = inserts
    first_parts, second_parts = (
        parts_named("t", first["checkpoint_id"]),
        parts_named("t", second["checkpoint_id"]),
    )
    assert set(parts.known) == first_parts & second_parts and parts.known
    assert set(parts.texts) == second_parts - first_parts and parts.texts
    assert len(seen) == 1  # still the one statement of a save on the thread this process saved into last
    assert StoredValue.objects.count() == len(first_parts | second_parts)
    assert restore(api, first["checkpoint_id"]).json()["state"] == chat(40)
    assert restore(api, second["checkpoint_id"]).json()["state"] == chat(41)


@pytest.mark.needs_part
def test_a_part_gone_behind_the_memos_back_is_sent_again(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    save(api, chat(40), thread="a")
    assert api.delete("/api/v1/threads/a/").status_code == 204
    StoredValue.objects.all().delete()  # as a restored backup, or an operator, might leave it
    small_save(api, "b")
    with parts_of_each_insert(monkeypatch) as inserts, statements() as seen:
        created = save(api, chat(40), thread="b")
    first, second = inserts
    assert first.known and not first.texts  # named from the memo: the statement found them gone
    assert not second.known and set(second.texts) == set(first.known)  # sent, after a read
    assert len(seen) == 3  # the refused write, the read, the write
    assert StoredValue.objects.count() == len(second.texts)
    assert restore(api, created["checkpoint_id"], thread="b").json()["state"] == chat(40)


@pytest.mark.needs_part
def test_a_statement_that_runs_past_its_deadline_writes_nothing_and_the_save_sends_the_parts(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline (a quarter of the grace period after the save started) is read from the database's
    clock: a save whose clock says it started that long before its statement runs is refused once, then
    sends its parts."""
    long_before = timezone.now() - GRACE / 2
    with time_machine.travel(long_before, tick=False):
        save(api, chat(40))
    with (
        time_machine.travel(long_before + timedelta(seconds=1), tick=False),
        parts_of_each_insert(monkeypatch) as inserts,
        statements() as seen,
    ):
        created = save(api, chat(40))
    first, second = inserts
    assert first.known and first.deadline is not None and first.deadline < timezone.now()
    assert not second.known and set(second.texts) == set(first.known)
    assert len(seen) == 3  # the refused write, the read, the write
    assert restore(api, created["checkpoint_id"]).json()["state"] == chat(40)


def sent_ago(age: timedelta) -> datetime:
    """Make this process remember every part it sent as sent `age` ago (the clock stays where it is: ids
    made while travelling to the future would run ahead of the real clock for the rest of the run)."""
    when = timezone.now() - age
    stored_values._sent.update(dict.fromkeys(stored_values._sent, when))
    return when


@pytest.mark.needs_part
def test_parts_sent_a_quarter_grace_period_ago_are_sent_again_and_marked_used(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    save(api, chat(40))
    sent_ago(GRACE / 4 - timedelta(seconds=5))
    with parts_of_each_insert(monkeypatch) as inserts:
        save(api, chat(40))
    assert inserts[0].known and not inserts[0].texts  # named, and so not remembered as sent again
    sent_at = sent_ago(GRACE / 4 + timedelta(seconds=1))
    # The oldest mark a part sent then can have: its save left it used half a grace period before that.
    StoredValue.objects.update(used_at=sent_at - GRACE / 2)
    with parts_of_each_insert(monkeypatch) as inserts:
        created = save(api, chat(40))
    assert not inserts[0].known and inserts[0].texts
    assert set(StoredValue.objects.values_list("used_at", flat=True)) == {inserts[0].used_at}
    assert restore(api, created["checkpoint_id"]).json()["state"] == chat(40)


@pytest.mark.needs_part
def test_the_collector_cannot_take_a_part_a_save_named_without_sending_it(
    api: ApiClient, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The latest a collector that looks before such a save commits can look (the save runs within a
    quarter of the grace period of its start) frees none of its parts, however old their marks may be."""
    save(api, chat(40), thread="a")
    assert api.delete("/api/v1/threads/a/").status_code == 204  # nothing names the parts now
    small_save(api, "b")
    sent_at = sent_ago(GRACE / 4 - timedelta(seconds=5))
    StoredValue.objects.update(used_at=sent_at - GRACE / 2)  # the oldest mark consistent with that
    with parts_of_each_insert(monkeypatch) as inserts:
        created = save(api, chat(40), thread="b")
    (parts,) = inserts
    assert parts.known and not parts.texts and parts.deadline is not None
    named_digests = stored_values.named_digests
    monkeypatch.setattr(stored_values, "named_digests", lambda pk: named_digests(pk) - set(parts.known))
    freed = stored_values.values_collect(workspace=workspace, now=parts.deadline)
    assert freed == {"values": 0, "bytes": 0}
    assert restore(api, created["checkpoint_id"], thread="b").json()["state"] == chat(40)


def test_a_save_inside_a_transaction_sends_every_part(
    api: ApiClient, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = save(api, chat(40))
    with parts_of_each_insert(monkeypatch) as inserts, transaction.atomic():
        checkpoint_save(workspace=workspace, thread_id="t", agent_id="a", state=chat(40))
    assert not inserts[0].known
    assert set(inserts[0].texts) == parts_named("t", first["checkpoint_id"])


def test_another_workspace_gets_its_own_parts_even_when_this_process_sent_the_same_ones(
    api: ApiClient, other_api: ApiClient, workspace: Workspace, other_workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    save(api, chat(40))
    small_save(other_api, "t")
    with parts_of_each_insert(monkeypatch) as inserts:
        created = save(other_api, chat(40))
    assert not inserts[0].known and inserts[0].texts
    mine = set(StoredValue.objects.filter(workspace=workspace).values_list("digest", flat=True))
    theirs = set(StoredValue.objects.filter(workspace=other_workspace).values_list("digest", flat=True))
    assert mine == theirs and mine
    assert restore(other_api, created["checkpoint_id"]).json()["state"] == chat(40)
