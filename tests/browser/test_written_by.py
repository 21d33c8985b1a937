"""An auditor task done through the dashboard alone, in headless Chromium: see who wrote a checkpoint (an
agent saved it over the API with its key), then list everything that key wrote. With CAIRN_SCREENSHOTS=1 it
writes docs/screenshots/search-checkpoints.png (search's checkpoint tab, 1280 px)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pytest_django.live_server_helper import LiveServer

from checkpoints.services.workspaces import api_key_create
from tests.browser.helpers import SCREENSHOT_WIDTH, follow, log_in
from tests.dashboard.world import World

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_shows_which_key_wrote_a_checkpoint_and_lists_what_that_key_wrote(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    key, secret = api_key_create(workspace=world.workspace, name="night-agent", scope="write")
    # One connection per request: a kept-alive one would hold a live-server thread (and its database
    # connection) open past the test.
    headers = {"Authorization": f"Bearer {secret}", "Connection": "close"}
    with httpx.Client(base_url=f"{live_server.url}/api/v1/", headers=headers) as api:
        for checkpoint_id in ("night-1", "night-2"):
            body: dict[str, object] = {"checkpoint_id": checkpoint_id, "agent_id": "night", "state": {}}
            saved = api.post("threads/run-9/checkpoints/", json=body)
            assert saved.status_code == 201, saved.text

    log_in(
        page,
        live_server,
        "/dashboard/w/acme/threads/run-9/checkpoints/night-2/?ns=",
        viewport=SCREENSHOT_WIDTH,
    )
    written_by = page.locator("[data-written-by]")
    assert written_by.locator("code").inner_text() == f"key:{key.prefix}"
    follow(page, written_by.get_by_role("link", name="its checkpoints"))

    listed = page.locator("table.search-checkpoints tbody tr")
    assert listed.count() == 2
    assert set(listed.locator("td:first-child a").all_inner_texts()) == {"night-1", "night-2"}
    assert page.get_by_label("Written by").input_value() == f"key:{key.prefix}"
    screenshot(page, "search-checkpoints")
