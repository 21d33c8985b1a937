"""Server-generated UUIDv7 ids."""

from __future__ import annotations

import time
import uuid

import pytest

from checkpoints.ids import new_id, uuid7

pytestmark = pytest.mark.one_backend  # pure code: the same on either backend (tests/conftest.py)


def test_it_is_a_version_7_rfc_uuid_with_the_current_time() -> None:
    value = uuid7()
    assert value.version == 7
    assert value.variant == uuid.RFC_4122
    assert abs((value.int >> 80) - time.time_ns() // 1_000_000) < 1000


def test_it_is_strictly_monotonic_across_10000_fast_calls() -> None:
    ids = [new_id() for _ in range(10_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
