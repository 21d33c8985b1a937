"""Headless Chromium for the browser tests (Playwright's Python package driving the system Chromium).

Without Chromium (or Playwright) the browser tests are skipped with the reason, unless
CAIRN_REQUIRE_BROWSER=1 (CI sets it): then they fail, so CI can never pass without running them.
Set CAIRN_SCREENSHOTS=1 to (re)write the screenshots under docs/screenshots/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from pytest_django.fixtures import Settings

from checkpoints.models import Workspace
from tests.dashboard.world import World, build_world, make_user

CHROMIUM = os.environ.get("CAIRN_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
VIEWPORT = {"width": 1366, "height": 860}  # a common laptop screen


def _chromium_path() -> str | None:
    found = shutil.which(CHROMIUM)
    return found if found and os.access(found, os.X_OK) else None


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CAIRN_REQUIRE_BROWSER") == "1":
        pytest.fail(f"CAIRN_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


# Package scope, not session: Playwright's sync API keeps an event loop running in this thread while it is
# open, and every later test that calls asyncio.run() (the SDK's async tests) would fail under it.
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    path = _chromium_path()
    if path is None:
        _unavailable(f"Chromium not found at {CHROMIUM} (install it: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls (fixtures, asserts)
    # are ordinary synchronous code and safe here, but Django cannot tell.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=path, args=LAUNCH_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser: Any, settings: Settings) -> Iterator[Any]:
    """A fresh browser context (no cookies) and page. The live server speaks plain HTTP, so its cookies
    cannot be Secure-only here."""
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # The dashboard's Content-Security-Policy must never have to block anything of its own.
    page.on(
        "console",
        lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None,
    )
    yield page
    context.close()
    assert not errors, f"JavaScript errors or Content-Security-Policy violations: {errors}"


@pytest.fixture
def screenshot() -> Any:
    """screenshot(page, name): saves docs/screenshots/<name>.png when CAIRN_SCREENSHOTS=1."""

    def take(page: Any, name: str) -> None:
        if os.environ.get("CAIRN_SCREENSHOTS") == "1":
            SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT_DIR / f"{name}.png"), full_page=True)

    return take


@pytest.fixture
def world(transactional_db: None) -> World:
    """Workspace "acme" (Acme Research) with the dashboard tests' world in it, and alice, its member."""
    workspace = Workspace.objects.create(slug="acme", name="Acme Research")
    world = build_world(workspace)
    make_user("alice", workspaces=(workspace,))
    return world
