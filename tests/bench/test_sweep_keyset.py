"""The retention sweep pages through its candidates with a keyset (`id > last`), so a large backlog costs
time linear in its size: before, every batch walked the primary key from the start, past every row it had
already tombstoned (a 1M-row backlog took 16 minutes in `manage.py bench`)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from checkpoints.models import Checkpoint, Workspace
from checkpoints.services.retention import retention_sweep
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def test_each_sweep_batch_starts_after_the_previous_one(workspace: Workspace) -> None:
    for n in range(7):
        make_checkpoint(workspace, f"t{n % 3}", ttl_seconds=60, state={"n": n})
    pks = sorted(Checkpoint.objects.values_list("pk", flat=True))
    with (
        time_machine.travel(timezone.now() + timedelta(hours=1)),
        CaptureQueriesContext(connection) as queries,
    ):
        counts = retention_sweep(batch_size=3)
    assert counts["expired"] == 7
    candidates = [q["sql"] for q in queries if q["sql"].rstrip().endswith("ORDER BY 1 ASC LIMIT 3")]
    assert len(candidates) == 3  # 3 + 3 + 1
    lower_bounds = [int(m.group(1)) for sql in candidates for m in [re.search(r'"id" > (\d+)', sql)] if m]
    assert lower_bounds == [0, pks[2], pks[5]]
