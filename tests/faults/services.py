"""Real services the fault tests may break: a throwaway PostgreSQL cluster and a redis-server of their own
(the machine's shared ones are never touched), and the production processes (gunicorn, celery worker and
beat) started against them with `checkpoints.bench.server`."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from checkpoints.bench.server import PYTHON, REPO, Stack, free_port
from tests.jobs.stack import wait_for


def postgres_bindir() -> Path | None:
    """Where initdb and pg_ctl live (PG_BINDIR, Debian's /usr/lib/postgresql/<v>/bin, or the PATH)."""
    candidates = [
        os.environ.get("PG_BINDIR", ""),
        *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True),
    ]
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    return None


def require_redis_server() -> None:
    """Skip the calling test where redis-server is not installed, or fail it with CAIRN_REQUIRE_REDIS_SERVER=1
    (`.ci/run` sets it, so that CI cannot pass without running these tests)."""
    if shutil.which("redis-server") is not None:
        return
    reason = "redis-server not found"
    if os.environ.get("CAIRN_REQUIRE_REDIS_SERVER") == "1":
        pytest.fail(f"CAIRN_REQUIRE_REDIS_SERVER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def missing_postgres_binaries() -> str | None:
    """Why a throwaway PostgreSQL cluster cannot run here, or None."""
    if postgres_bindir() is None:
        return "PostgreSQL server binaries (initdb, pg_ctl) not found; set PG_BINDIR"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser (initdb refuses to run as root)"
    return None


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class PostgresCluster:
    """A PostgreSQL cluster in a temporary directory on a free port (trust auth, no fsync: it is thrown
    away; a crash of the server process still loses nothing committed, the OS keeps the written WAL)."""

    def __init__(self) -> None:
        bindir = postgres_bindir()
        assert bindir is not None
        self.bindir = bindir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="cairn-faults-pg-"))
        self.data = self.root / "data"
        # initdb refuses to run as root: the cluster belongs to the postgres user when tests run as root.
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            shutil.chown(self.root, user="postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8")  # fmt: skip

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self._as, str(self.bindir / tool), *args], check=True, capture_output=True, timeout=120
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options, "-w", "start"
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "immediate") -> None:
        """Stop (by default like a crash: no shutdown checkpoint, connections cut) and start again."""
        self.stop(mode)
        self.start()

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, template: str | None = None) -> str:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            if template:
                statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
            conn.execute(statement)
        return self.url(name)

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


class RedisServer:
    """`redis-server --save "" --appendonly no` on a free port: no persistence, so a restart loses everything,
    as the worst real restart would."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: port_open(self.port), bool, timeout=10, what="redis-server to listen")

    def kill(self) -> None:
        """Gone at once, like a crashed server: connections are refused."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def pause(self) -> None:
        """Hung (SIGSTOP): connections are accepted by the kernel and never answered."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.resume()
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def running_redis_server() -> Iterator[RedisServer]:
    """A started RedisServer of the test's own, stopped on exit (the test is skipped without redis-server)."""
    require_redis_server()
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def spawn(stack: Stack, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
    """A child process of the stack in its own process group (so a SIGKILL takes its children too)."""
    log = (stack.root / f"{name}.log").open("ab")
    return subprocess.Popen(
        [PYTHON, *argv],
        cwd=REPO,
        env=stack.env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_group(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 15) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
