"""Concurrent appenders to one thread, each on its own PostgreSQL connection: seqs stay gapless and unique."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from checkpoints.models import Message, Thread, Workspace
from checkpoints.services.messages import messages_append
from tests.concurrency.runner import run_concurrently
from tests.factories import WorkspaceFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WRITERS = 8
PER_WRITER = 200
BATCH = 5


def test_it_hands_out_seqs_1_to_1600_without_gap_or_duplicate_under_8_concurrent_writers() -> None:
    workspace: Workspace = WorkspaceFactory.create()

    def writer(number: int) -> Callable[[], None]:
        def work() -> None:
            for start in range(0, PER_WRITER, BATCH):
                batch: list[dict[str, Any]] = [
                    {"message_id": f"w{number}-{n}", "role": "user", "content": f"writer {number} #{n}"}
                    for n in range(start, start + BATCH)
                ]
                messages_append(workspace=workspace, thread_id="race", messages=batch)

        return work

    # The thread does not exist yet: the writers also race to create it.
    assert run_concurrently([writer(n) for n in range(WRITERS)]) == []

    rows = list(
        Message.objects.filter(thread__thread_id="race")
        .order_by("seq")
        .values_list("seq", "message_id", "created_at")
    )
    total = WRITERS * PER_WRITER
    assert [seq for seq, _, _ in rows] == list(range(1, total + 1))
    assert Thread.objects.get(thread_id="race").last_message_seq == total
    # Time order agrees with seq order, strictly.
    times = [created for _, _, created in rows]
    assert all(earlier < later for earlier, later in itertools.pairwise(times))
    for number in range(WRITERS):
        mine = [(seq, int(mid.split("-")[1])) for seq, mid, _ in rows if mid.startswith(f"w{number}-")]
        # Each writer's messages keep its order, and each batch got a contiguous block of seqs.
        assert [n for _, n in mine] == list(range(PER_WRITER))
        for start in range(0, PER_WRITER, BATCH):
            block = [seq for seq, n in mine if start <= n < start + BATCH]
            assert block == list(range(block[0], block[0] + BATCH))


def test_it_settles_racing_retries_of_one_batch_to_a_single_copy() -> None:
    workspace: Workspace = WorkspaceFactory.create()
    batch = [{"message_id": f"m{n}", "role": "user", "content": str(n)} for n in range(20)]

    def retry() -> None:
        messages_append(workspace=workspace, thread_id="retries", messages=batch)

    assert run_concurrently([retry] * 4) == []
    assert list(
        Message.objects.filter(thread__thread_id="retries").order_by("seq").values_list("seq", flat=True)
    ) == list(range(1, 21))
