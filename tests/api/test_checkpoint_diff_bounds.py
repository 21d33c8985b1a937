"""The diff's bound: documents holding more than CAIRN_DIFF_MAX_NODES JSON values together are refused with
a 422 naming the limit before any comparison starts; everything under it diffs as before."""

from __future__ import annotations

import time

import pytest
import yaml
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from checkpoints.models import Checkpoint, Workspace
from checkpoints.services import checkpoint_reads
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"


def large_pair(workspace: Workspace, keys: int) -> Checkpoint:
    """A parent and a child whose states each hold `keys` keys, none shared: the most work for a diff."""
    make_checkpoint(workspace, "t1", checkpoint_id="p", state={f"old-{i}": i for i in range(keys)})
    return make_checkpoint(workspace, "t1", checkpoint_id="c", state={f"new-{i}": i for i in range(keys)})


def test_it_refuses_a_diff_over_the_default_bound_quickly_and_before_comparing(
    api: ApiClient, workspace: Workspace, patch_calls: list[int]
) -> None:
    # 2 x 200,000 keys (2 x 3 MB): the unbounded diff took ~10 s on one core here, the refusal ~0.3 s.
    large_pair(workspace, 200_000)
    started = time.perf_counter()
    response = api.get(f"{CPS}c/diff/")
    elapsed = time.perf_counter() - started
    assert response.status_code == 422
    assert response.json()["error"] == {
        "code": "diff_too_large",
        "message": "These checkpoints hold more than 100000 JSON values together, more than a diff compares "
        "(CAIRN_DIFF_MAX_NODES). Restore both and compare them where you need the difference.",
        "details": {"limit": 100_000, "setting": "CAIRN_DIFF_MAX_NODES"},
    }
    assert patch_calls == []
    # Not a speed test (those are benchmarks): a guard, with a 10x margin, against comparing anyway.
    assert elapsed < 3.0


def test_the_bound_counts_both_documents_and_is_a_setting(
    api: ApiClient, workspace: Workspace, settings: SettingsWrapper, patch_calls: list[int]
) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="p", state={"n": [1, 2]})
    make_checkpoint(workspace, "t1", checkpoint_id="c", state={"n": [1, 2, 3]})
    # {"state": {"n": [1, 2]}, "context": {}, "metadata": {}}: 7 values; the child's 8; together 15.
    settings.CAIRN_DIFF_MAX_NODES = 15
    within = api.get(f"{CPS}c/diff/")
    assert within.status_code == 200
    assert within.json()["patch"] == [{"op": "add", "path": "/state/n/2", "value": 3}]
    settings.CAIRN_DIFF_MAX_NODES = 14
    over = api.get(f"{CPS}c/diff/")
    assert over.status_code == 422
    assert over.json()["error"]["details"] == {"limit": 14, "setting": "CAIRN_DIFF_MAX_NODES"}
    assert "more than 14 JSON values" in over.json()["error"]["message"]
    # A root is diffed from an empty document ({}: one value).
    settings.CAIRN_DIFF_MAX_NODES = 7 + 1
    assert api.get(f"{CPS}p/diff/").status_code == 200
    settings.CAIRN_DIFF_MAX_NODES = 7
    assert api.get(f"{CPS}p/diff/").status_code == 422
    assert len(patch_calls) == 2


def test_a_refused_diff_still_checks_expiry_and_integrity_first(
    api: ApiClient, workspace: Workspace, settings: SettingsWrapper
) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="p", state={"n": 1})
    make_checkpoint(workspace, "t1", checkpoint_id="c", state={"n": 2})
    Checkpoint.objects.filter(checkpoint_id="p").update(state='{"n":3}')
    settings.CAIRN_DIFF_MAX_NODES = 1
    response = api.get(f"{CPS}c/diff/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "checksum_mismatch"


def test_it_counts_values_without_walking_past_the_limit() -> None:
    document = {"a": [1, {"b": None}], "c": "x"}
    assert checkpoint_reads.json_value_count(document, 100) == 6
    assert checkpoint_reads.json_value_count(document, 3) == 4
    assert checkpoint_reads.json_value_count([], 0) == 1


def test_the_schema_documents_the_refusal_on_the_diff_only() -> None:
    document = yaml.safe_load(APIClient().get("/api/v1/schema/").content)
    diff = document["paths"]["/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/diff/"]["get"]
    assert diff["responses"]["422"]["description"].startswith("diff_too_large:")
    assert diff["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    restore = document["paths"]["/api/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/"]["get"]
    assert "422" not in restore["responses"]
