"""Concurrent saves on real PostgreSQL connections: the thread row lock and the unique constraints settle
every race (no check-then-insert)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection

from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.services.checkpoints import SaveResult, checkpoint_save

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WRITERS = 6


def _race(work: Callable[[int], Any], writers: int = WRITERS) -> list[Any]:
    barrier = threading.Barrier(writers)

    def run(n: int) -> Any:
        try:
            barrier.wait(timeout=10)
            return work(n)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=writers) as pool:
        return list(pool.map(run, range(writers)))


def test_it_creates_one_thread_and_one_chain_when_writers_race_into_a_new_thread(
    workspace: Workspace,
) -> None:
    results: list[SaveResult] = _race(
        lambda n: checkpoint_save(workspace=workspace, thread_id="new", agent_id=f"w{n}", state={"n": n})
    )

    assert all(r.created for r in results)
    assert Thread.objects.filter(workspace=workspace, thread_id="new").count() == 1
    # Serialised by the thread lock: each save's parent is the previous one, steps 0..n-1, a single chain.
    chain = list(Checkpoint.objects.filter(thread__thread_id="new").order_by("id"))
    assert [c.parent_checkpoint_id for c in chain] == [None] + [c.checkpoint_id for c in chain[:-1]]
    assert [c.step_index for c in chain] == list(range(WRITERS))
    assert Thread.objects.get(thread_id="new").state_version == WRITERS


def test_it_stores_one_checkpoint_when_retries_of_one_id_race(workspace: Workspace) -> None:
    results: list[SaveResult] = _race(
        lambda n: checkpoint_save(
            workspace=workspace, thread_id="t", checkpoint_id="same", agent_id="a", state={"n": 1}
        )
    )
    assert sorted(r.created for r in results) == [False] * (WRITERS - 1) + [True]
    assert Checkpoint.objects.filter(checkpoint_id="same").count() == 1
    assert len({r.checkpoint.checksum for r in results}) == 1
