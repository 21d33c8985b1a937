"""The benchmark's own database and a production-like server in front of it.

Nothing here touches the database `DATABASE_URL` names: the benchmark creates a database of its own next to
it (same server, same settings), migrates it, serves it with the Procfile's own `web` command (read at run
time: `gunicorn project.wsgi --workers N ...`, DEBUG off, persistent connections, Redis as cache), and drops
it at the end. Redis keys carry a per-run prefix and are deleted afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess  # nosec B404 # starts the server under test and manage.py, with fixed argv
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import redis
from psycopg import sql

from checkpoints.bench.stats import BenchError

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
PROCFILE = REPO / "Procfile"
WSGI_APP = "project.wsgi"
_VARIABLE = re.compile(r"\$\{(\w+)(?::-[^}]*)?\}|\$(\w+)")
# A web command to measure in place of the Procfile's (read by this process only; see candidate_web_argv).
CANDIDATE_WEB_LINE = "CAIRN_CANDIDATE_WEB_LINE"
# The benchmark key's own rate: throttling still runs (two Redis round trips per request, as in
# production), it just never refuses the load generator.
BENCH_THROTTLE_RATE = "1000000/s"


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def with_database(url: str, name: str) -> str:
    """`url` pointing at database `name` on the same server, with the same credentials and options."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def bench_database(server_url: str, name: str, *, keep: bool = False) -> Iterator[str]:
    """A fresh, empty database `name` on the server of `server_url` (dropped afterwards unless `keep`)."""
    admin = with_database(server_url, "postgres")
    identifier = sql.Identifier(name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(identifier))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(identifier))
    try:
        yield with_database(server_url, name)
    finally:
        if not keep:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(identifier))


@dataclass
class Stack:
    """Everything the child processes share: the environment and a folder for their logs. `extra` holds
    settings every child gets on top of the production-like defaults (the fault tests shorten timeouts)."""

    database_url: str
    redis_url: str
    root: Path
    cache_prefix: str
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, database_url: str, redis_url: str, root: Path, **extra: str) -> Stack:
        root.mkdir(parents=True, exist_ok=True)
        return cls(database_url, redis_url, root, f"cairn-bench-{secrets.token_hex(4)}", dict(extra))

    def env(self, **extra: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("CAIRN_", "CELERY_"))}
        env.update(
            {
                # Explicit values win over a developer's `.env` (settings read it without overwriting).
                "SECRET_KEY": secrets.token_urlsafe(50),
                "DEBUG": "false",
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis_url,
                # Without Redis: local-memory cache and the filesystem broker (the embedded default).
                "CELERY_BROKER_URL": self.redis_url or "filesystem://",
                "SQLITE_PATH": str(self.root / "db.sqlite3"),
                "CELERY_TASK_DEFAULT_QUEUE": self.cache_prefix,
                "CACHE_KEY_PREFIX": self.cache_prefix,
                "CAIRN_DATA_DIR": str(self.root / "data"),
                "LOG_LEVEL": "WARNING",
                "PYTHONPATH": str(REPO),
                **self.extra,
                **extra,
            }
        )
        return env

    def manage(self, *args: str, timeout: float = 600) -> str:
        """Run `manage.py <args>` against the benchmark database; its stdout."""
        result = subprocess.run(  # nosec B603 # argv built here from sys.executable, no shell
            [PYTHON, str(REPO / "manage.py"), *args],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise BenchError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def api_key(
        self, workspace: str, *, scopes: str = "admin", throttle_rate: str = BENCH_THROTTLE_RATE
    ) -> str:
        """A key of `workspace` (created if missing); by default admin, with the benchmark's throttle rate."""
        out = self.manage(
            "create_api_key", "--workspace", workspace, "--scopes", scopes, "--name", "bench",
            "--throttle-rate", throttle_rate,
        )  # fmt: skip
        return out.strip().splitlines()[-1]

    def forget_cache(self) -> None:
        """Delete this run's Redis keys (and only those)."""
        client = redis.Redis.from_url(self.redis_url)
        for key in client.scan_iter(match=f"{self.cache_prefix}*", count=1000):
            client.delete(key)


def procfile_web_argv(app: str, *, port: int, workers: int) -> list[str]:
    """The Procfile's `web` command as argv, read now (so the benchmark cannot drift from production), with:
    `project.wsgi` replaced by `app` (Cairn itself, or the floor); `$PORT` and `$WEB_CONCURRENCY` set to
    `port` and `workers`; the bind address narrowed to loopback; `gunicorn` run as `python -m gunicorn`
    (this interpreter's); and, appended, `--graceful-timeout 5` (shutdown only: a stop never waits 30 s
    for a busy worker). Every other flag is the Procfile's, as written."""
    if candidate := os.environ.get(CANDIDATE_WEB_LINE):
        return candidate_web_argv(candidate, app, port=port, workers=workers)
    lines = [line for line in PROCFILE.read_text().splitlines() if line.startswith("web:")]
    if len(lines) != 1:
        raise BenchError(f"{PROCFILE} must have exactly one `web:` line")
    argv = expand_web_line(lines[0].removeprefix("web:"), port=port, workers=workers)
    if argv[:1] != ["gunicorn"] or argv.count(WSGI_APP) != 1 or "--bind" not in argv[:-1]:
        raise BenchError(f"the Procfile's web line is not `gunicorn {WSGI_APP} --bind HOST:PORT ...`: {argv}")
    argv[argv.index(WSGI_APP)] = app
    bind = argv.index("--bind") + 1
    argv[bind] = f"127.0.0.1:{argv[bind].rpartition(':')[2]}"
    return [PYTHON, "-m", *argv, "--graceful-timeout", "5"]


def candidate_web_argv(line: str, app: str, *, port: int, workers: int) -> list[str]:
    """Another server's command in place of the Procfile's, to measure it the same way (docs/architecture.md,
    "Why not a maintained server"): `$PORT` and `$WEB_CONCURRENCY` as above, `project.wsgi` (alone or as
    `project.wsgi:application`) replaced by `app`, the first word run as a module of this interpreter. It
    must bind loopback itself."""
    argv = expand_web_line(line, port=port, workers=workers)
    served = [
        app + word.removeprefix(WSGI_APP) if word.partition(":")[0] == WSGI_APP else word for word in argv
    ]
    if app != WSGI_APP and served == argv:
        raise BenchError(f"{CANDIDATE_WEB_LINE} does not name {WSGI_APP}, so it cannot serve {app}")
    return [PYTHON, "-m", *served]


def expand_web_line(line: str, *, port: int, workers: int) -> list[str]:
    values = {"PORT": str(port), "WEB_CONCURRENCY": str(workers)}

    def expand(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in values:
            raise BenchError(f"the Procfile's web line uses ${name}, which the benchmark does not set")
        return values[name]

    return shlex.split(_VARIABLE.sub(expand, line))


class Gunicorn:
    """The Procfile's `web` command (see `procfile_web_argv`) with N worker processes on a free loopback port:
    Cairn (`project.wsgi`), or another WSGI app served exactly the same way (the floor)."""

    def __init__(self, stack: Stack, *, workers: int, app: str = WSGI_APP, settings: str = "") -> None:
        self.stack = stack
        self.workers = workers
        self.app = app  # it must answer GET /healthz with 200 once it is up
        self.settings = settings  # a Django settings module in place of the production one (benchmark routes)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        return procfile_web_argv(self.app, port=self.port, workers=self.workers)

    def start(self, timeout: float = 60) -> None:
        name = "gunicorn.log" if self.app == WSGI_APP else f"gunicorn-{self.app}.log"
        if self.settings:
            name = f"gunicorn-{self.settings}.log"
        log = (self.stack.root / name).open("ab")
        self.process = subprocess.Popen(  # nosec B603 # argv from the Procfile and sys.executable, no shell
            self.argv(),
            cwd=REPO,
            env=self.stack.env(**({"DJANGO_SETTINGS_MODULE": self.settings} if self.settings else {})),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() takes the workers down with it
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"gunicorn exited with {self.process.returncode}; see {log.name}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        self.stop()
        raise BenchError(f"gunicorn did not answer /healthz within {timeout} s; see {log.name}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> Gunicorn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
