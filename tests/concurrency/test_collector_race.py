"""The value collector racing a save that reuses the parts it is about to delete (docs/storage.md), on
PostgreSQL with each side on its own connection."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from checkpoints.models import StoredValue, Workspace
from checkpoints.storage import stored_values
from tests.conftest import ApiClient
from tests.storage.test_stored_values import chat, restore, save

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def orphaned_parts(api: ApiClient) -> int:
    """Parts of a deleted thread, last used before the grace period: what the collector deletes."""
    save(api, chat(40), thread="old")
    assert api.delete("/api/v1/threads/old/").status_code == 204
    long_ago = timezone.now() - 2 * timedelta(seconds=settings.CAIRN_VALUE_GRACE_SECONDS)
    stored_values.forget_sent_parts()  # sent that long ago, so no process names them without sending them
    return StoredValue.objects.update(used_at=long_ago)


def in_thread(work: Any) -> tuple[threading.Thread, list[Any]]:
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(work())
        except BaseException as exc:  # handed to the test
            results.append(exc)
        finally:
            connection.close()

    runner = threading.Thread(target=run)
    runner.start()
    return runner, results


def test_a_save_between_the_collectors_look_and_its_delete_keeps_its_parts(
    api: ApiClient, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = orphaned_parts(api)
    looked, go_on = threading.Event(), threading.Event()
    named_digests = stored_values.named_digests

    def look_then_wait(workspace_id: int) -> set[bytes]:
        named = named_digests(workspace_id)
        looked.set()
        assert go_on.wait(30)
        return named

    monkeypatch.setattr(stored_values, "named_digests", look_then_wait)
    collector, freed = in_thread(lambda: stored_values.values_collect(workspace=workspace))
    assert looked.wait(30)
    created = save(
        api, chat(40), thread="new"
    )  # the same parts, none of them named when the collector looked
    go_on.set()
    collector.join(30)
    assert freed == [{"values": 0, "bytes": 0}]
    assert StoredValue.objects.count() == parts
    assert restore(api, created["checkpoint_id"], thread="new").json()["state"] == chat(40)


def test_a_save_during_the_collectors_delete_stores_its_parts_again(
    api: ApiClient, workspace: Workspace
) -> None:
    parts = orphaned_parts(api)
    deleted, commit = threading.Event(), threading.Event()

    def collect_and_hold() -> dict[str, int]:
        with transaction.atomic():
            freed = stored_values.values_collect(workspace=workspace)
            deleted.set()
            assert commit.wait(30)
        return freed

    collector, freed = in_thread(collect_and_hold)
    assert deleted.wait(30)
    saver, saved = in_thread(lambda: save(api, chat(40), thread="new"))
    time.sleep(0.5)
    assert saver.is_alive()  # waiting on the rows the collector's uncommitted delete holds
    commit.set()
    collector.join(30)
    saver.join(30)
    assert freed == [{"values": parts, "bytes": freed[0]["bytes"]}] and freed[0]["bytes"] > 0
    assert StoredValue.objects.count() == parts  # stored again by the save
    created = saved[0]
    assert restore(api, created["checkpoint_id"], thread="new").json()["state"] == chat(40)
