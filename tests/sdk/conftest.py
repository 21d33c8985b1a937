"""Fixtures for SDK tests: a live Cairn server (pytest-django `live_server`: real HTTP against the test
database, PostgreSQL when DATABASE_URL is set) and API keys for it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from django.db import connection

from checkpoints.models import ApiKey, Workspace
from checkpoints.sdk import Client
from tests.conftest import ApiClient
from tests.factories import WorkspaceFactory

REPO = Path(__file__).resolve().parents[2]

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class OneRequestAtATime:
    """Serialises requests to the live server when the test database is in-memory SQLite.

    Django shares that one connection between the test thread and every server thread; two requests using it
    at once would interleave their transactions. PostgreSQL gives each server thread its own connection, so
    there requests run truly concurrently.
    """

    def __init__(self, app: WSGIApp) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self.lock:
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]


@pytest.fixture
def cairn_url(live_server: Any) -> str:
    """The base URL of a live Cairn server on the test database."""
    httpd = live_server.thread.httpd
    if connection.vendor == "sqlite" and cast(Any, connection).is_in_memory_db():
        app = httpd.get_app()
        if not isinstance(app, OneRequestAtATime):
            httpd.set_app(OneRequestAtATime(app))
    return str(live_server.url)


@pytest.fixture
def sdk_workspace(transactional_db: None) -> Workspace:
    return WorkspaceFactory.create(slug="sdk")


@pytest.fixture
def make_key(transactional_db: None, make_client: Callable[..., ApiClient]) -> Callable[..., str]:
    """make_key(workspace, scope="write") -> a fresh API key secret (the key of a `make_client` client)."""

    def make(workspace: Workspace, scope: str = ApiKey.Scope.WRITE) -> str:
        return make_client(workspace, scope).secret

    return make


@pytest.fixture
def cairn_key(sdk_workspace: Workspace, make_key: Callable[..., str]) -> str:
    return make_key(sdk_workspace)


@pytest.fixture
def client(cairn_url: str, cairn_key: str) -> Iterator[Client]:
    with Client(cairn_url, cairn_key) as sdk:
        yield sdk


def subprocess_env(cairn_url: str, cairn_key: str) -> dict[str, str]:
    """A clean environment for a child process that talks to the live server (no Django settings)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",
        "CAIRN_URL": cairn_url,
        "CAIRN_API_KEY": cairn_key,
    }


PYTHON = sys.executable


def run_python(
    python: str, args: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 180
) -> str:
    """Run `python` with `args` in `cwd`; it must exit 0 (the end of its stderr says why not). Its output."""
    done = subprocess.run(
        [python, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def kill_in_tools(args: list[str], env: dict[str, str], marker: Path, saver: Any, config: Any) -> None:
    """Run the example graph (`PYTHON args`, told to wait in its tools node and touch `marker` there) until
    `saver` holds its checkpoint after `plan` (next: tools), then kill it with SIGKILL."""
    doomed = subprocess.Popen(
        [PYTHON, *args],
        env={**env, "CAIRN_EXAMPLE_PAUSE_IN_TOOLS": str(marker)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while True:
        saved = saver.get_tuple(config)
        if marker.exists() and saved is not None and saved.metadata.get("step") == 1:
            break
        assert doomed.poll() is None, doomed.communicate()
        assert time.monotonic() < deadline, "the run never reached the tools node"
        time.sleep(0.1)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=30)
    assert doomed.returncode == -signal.SIGKILL


def kill_and_resume(
    args: list[str], env: dict[str, str], tmp_path: Path, saver: Any, app: Any, config: Any
) -> tuple[list[str], Any]:
    """The crash test of the example graph: run it (`PYTHON args`, the thread id last) and kill it in its
    tools node (`kill_in_tools`), then run it again until done: it must print `recovered`, then `resumed
    after review`, then `done`, and end as a resumed run does (`assert_resumed_to_the_end`). Returns what
    each run after the kill printed, and `app`'s final state (its StateSnapshot for `config`)."""
    marker, log = tmp_path / "in-tools", tmp_path / "nodes.log"
    env = {**env, "CAIRN_EXAMPLE_LOG": str(log)}
    kill_in_tools(args, env, marker, saver, config)
    printed = []
    for outcome in ("recovered", "resumed after review", "done"):
        printed.append(run_python(PYTHON, args, env, timeout=120))
        assert outcome in printed[-1]  # `recovered`: continues at `tools`, stops at the review
    final = app.get_state(config)
    assert_resumed_to_the_end(log, final)
    return printed, final


def assert_resumed_to_the_end(log: Path, final: Any) -> None:
    """The example graph, killed in its tools node (`kill_in_tools`) and run again until done, logged its
    nodes to `log` and reached `final` (its StateSnapshot) as a resumed run does: `plan` never ran again,
    `tools` ran twice (killed, then resumed), `review` re-ran on resume (as LangGraph's interrupt() does)."""
    assert log.read_text().split() == ["plan", "tools", "tools", "review", "review", "finish"]
    assert final.next == ()
    assert final.values["results"] == {"add": 13, "multiply": 42}
    assert final.values["approved"] is True
