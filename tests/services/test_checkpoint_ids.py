"""Server-generated checkpoint ids through the save service: UUIDv7, strictly monotonic in creation order."""

from __future__ import annotations

import uuid

import pytest

from checkpoints.models import Checkpoint, Workspace
from checkpoints.services.checkpoints import checkpoint_save

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_it_hands_out_monotonic_ids_across_1000_fast_saves(workspace: Workspace) -> None:
    saved = [
        checkpoint_save(workspace=workspace, thread_id=f"t{n % 7}", agent_id="a", state={"n": n}).checkpoint
        for n in range(1_000)
    ]
    ids = [checkpoint.checkpoint_id for checkpoint in saved]
    assert ids == sorted(ids)
    assert len(set(ids)) == 1_000
    assert all(uuid.UUID(i).version == 7 for i in ids[::97])
    # Sorted ids are creation order, which is also the order the timeline uses.
    by_creation = list(Checkpoint.objects.order_by("id").values_list("checkpoint_id", flat=True))
    assert by_creation == ids
