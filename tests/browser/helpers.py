"""What the browser tests share besides fixtures: signing in through the dashboard's login page, going
from page to page and submitting forms, and the window size the screenshots are taken at."""

from __future__ import annotations

from typing import Any

from pytest_django.live_server_helper import LiveServer

from tests.dashboard.world import PASSWORD

SCREENSHOT_WIDTH = {"width": 1280, "height": 860}


def log_in(
    page: Any, live_server: LiveServer, path: str = "/dashboard/", viewport: dict[str, int] | None = None
) -> None:
    """Open `path` (in a window of `viewport`'s size, when given), which sends an anonymous visitor to the
    login page, and sign in there as alice."""
    if viewport is not None:
        page.set_viewport_size(viewport)
    page.goto(live_server.url + path)
    assert "/dashboard/login/" in page.url
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    follow(page, page.get_by_role("button", name="Sign in"))


def open_workspace_section(page: Any, live_server: LiveServer, name: str) -> None:
    """Sign in at the acme workspace, in a window of the screenshots' size, and open its section `name`."""
    log_in(page, live_server, "/dashboard/w/acme/", viewport=SCREENSHOT_WIDTH)
    open_section(page, name)


def follow(page: Any, link: Any) -> None:
    """Click `link` (a link or a form's submit button) and wait until the page it opens has loaded. A click
    returns once the navigation has started, so without the wait a read that does not retry (a locator's
    `count()`, an attribute) could still see the page the click left."""
    with page.expect_navigation():
        link.click()


def open_section(page: Any, name: str) -> None:
    """Follow the workspace navigation's link `name` ("Threads", "Search", "Audit log"...)."""
    follow(page, page.get_by_role("navigation", name="Workspace").get_by_role("link", name=name))


def submit(page: Any, button: str, *, lands_on: str, flash: str) -> None:
    """Press the form's button `button`, then check where it lands: an address ending with `lands_on` and a
    flash message that says `flash`."""
    follow(page, page.get_by_role("button", name=button))
    assert page.url.endswith(lands_on)
    assert flash in page.locator(".flash").inner_text()


def apply_filter(page: Any, label: str, value: str) -> None:
    """Type `value` into the list filter labelled `label` and apply the filters."""
    page.get_by_label(label).fill(value)
    follow(page, page.get_by_role("button", name="Apply"))


def open_filtered_list(page: Any, live_server: LiveServer, section: str, label: str, value: str) -> None:
    """Sign in, open the workspace section `section` and filter its list with `label` set to `value`."""
    open_workspace_section(page, live_server, section)
    apply_filter(page, label, value)
