"""The dashboard's diff is bounded like the API's (CAIRN_DIFF_MAX_NODES): over the bound it answers a 422
page naming the limit, quickly and before comparing anything; the JSON download too."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings as SettingsWrapper

from checkpoints.models import Workspace
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def diff_url(workspace: Workspace, checkpoint_id: str, **params: str) -> str:
    url = reverse("dashboard:checkpoint-diff", args=[workspace.slug, "t1", checkpoint_id])
    return url + "?" + "&".join(["ns=", *(f"{k}={v}" for k, v in params.items())])


def test_it_refuses_a_diff_over_the_bound_quickly_with_a_page_naming_it(
    dash: Client, workspace: Workspace, patch_calls: list[int]
) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="p", state={f"old-{i}": i for i in range(200_000)})
    make_checkpoint(workspace, "t1", checkpoint_id="c", state={f"new-{i}": i for i in range(200_000)})
    for params in ({}, {"format": "json"}):
        started = time.perf_counter()
        response = dash.get(diff_url(workspace, "c", **params))
        elapsed = time.perf_counter() - started
        assert response.status_code == 422
        page = response.content.decode()
        assert "more than 100000 JSON values together" in page and "CAIRN_DIFF_MAX_NODES" in page
        # Not a speed test: a guard, with a 10x margin, against comparing anyway (that took ~10 s here).
        assert elapsed < 3.0
    assert patch_calls == []


def test_diffs_within_the_bound_render_as_before(
    dash: Client, workspace: Workspace, settings: SettingsWrapper
) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="p", state={"plan": ["a"]})
    make_checkpoint(workspace, "t1", checkpoint_id="c", state={"plan": ["a", "b"]})
    settings.CAIRN_DIFF_MAX_NODES = 13  # exactly both documents' 6 + 7 values
    page = dash.get(diff_url(workspace, "c"))
    assert page.status_code == 200
    assert "/state/plan/1" in page.content.decode()
    settings.CAIRN_DIFF_MAX_NODES = 12
    assert dash.get(diff_url(workspace, "c")).status_code == 422
