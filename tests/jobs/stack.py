"""Real processes for the worker and run tests: a temporary stack (database, data dir, broker queue) with
`celery worker`, `celery beat` and the driver (tests/jobs/driver.py) as child processes.

Each stack has its own SQLite file (or a fresh PostgreSQL database), its own CAIRN_DATA_DIR (so the
filesystem broker's folders are never shared) and its own queue name (so a shared Redis is safe too).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from checkpoints.bench.server import PYTHON, REPO, bench_database, database_name

# Variables of the outer test run that must not leak into a stack (it chooses its own).
_OWN = (
    "DATABASE_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "SQLITE_PATH",
    "CAIRN_DATA_DIR",
    "DJANGO_SETTINGS_MODULE",
)

T = TypeVar("T")


def wait_for(
    fetch: Callable[[], T], accept: Callable[[T], bool], *, timeout: float = 90, what: str = ""
) -> T:
    """Poll `fetch()` until `accept(value)`; fail with the last value seen after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last value: {value!r}")
        time.sleep(0.1)


def stack_env(root: Path, *, redis_url: str = "", database_url: str = "", **extra: str) -> dict[str, str]:
    """The environment of a stack in `root`: the embedded default (SQLite file, filesystem broker) unless
    `redis_url` / `database_url` are given. Every choice is set explicitly: real environment variables win
    over a `.env` file in the repository, so nothing of the developer's setup leaks in."""
    env = {key: value for key, value in os.environ.items() if key not in _OWN}
    env.update(
        {
            "SECRET_KEY": "stack-test-secret-key",
            "DEBUG": "true",
            "DATABASE_URL": database_url,
            "SQLITE_PATH": str(root / "db.sqlite3"),
            "REDIS_URL": redis_url,
            "CELERY_BROKER_URL": redis_url or "filesystem://",
            "CAIRN_DATA_DIR": str(root / "data"),
            "CELERY_TASK_DEFAULT_QUEUE": f"test-{uuid.uuid4().hex[:12]}",
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
    )
    return env


@contextlib.contextmanager
def fresh_postgres_database(url: str) -> Iterator[str]:
    """A new, empty database next to the one `url` names (dropped afterwards); yields its URL."""
    with bench_database(url, f"{database_name(url) or 'cairn'}_stack_{uuid.uuid4().hex[:8]}") as fresh:
        yield fresh


class Driver:
    """The driver process: one JSON command in, one JSON answer out."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [PYTHON, "-m", "tests.jobs.driver"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __call__(self, cmd: str, **arguments: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"cmd": cmd, **arguments}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the driver died (exit code {self.process.poll()})"
        answer = json.loads(line)
        assert "error" not in answer, answer["error"]
        return answer["ok"]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Stack:
    """Child processes sharing one environment; logs go to `<root>/<name>.log`."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._driver: Driver | None = None

    def manage(self, *args: str, timeout: float = 180) -> str:
        result = subprocess.run(
            [PYTHON, str(REPO / "manage.py"), *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    @property
    def driver(self) -> Driver:
        if self._driver is None:
            self._driver = Driver(self.env)
        return self._driver

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.root / f"{name}.log").open("wb")
        # Own session, so the whole group (Celery's pool processes too) can be stopped at the end.
        process = subprocess.Popen(
            argv, cwd=self.root, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.processes[name] = process
        return process

    def start_worker(self, name: str = "worker") -> None:
        self.spawn(
            name,
            [
                PYTHON,
                "-m",
                "celery",
                "-A",
                "project",
                "worker",
                "--include",
                "tests.jobs.worker_tasks",
                "--loglevel",
                "INFO",
                "--concurrency",
                "2",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"stack-{uuid.uuid4().hex[:8]}@%h",
            ],
        )

    def start_beat(self) -> None:
        self.spawn("beat", [PYTHON, "-m", "celery", "-A", "project", "beat", "--loglevel", "INFO"])

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):  # killed just below
                process.wait(timeout=20)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
