"""`manage.py serve [--host H] [--port P] [--concurrency N] [--seed-demo]`: the one-command run.

Starts three child processes and supervises them:
- web: Django's server (API, dashboard, admin; static files with DEBUG=true),
- worker: `celery worker` (jobs and the scheduled retention work),
- beat: `celery beat` (the schedule in settings.CELERY_BEAT_SCHEDULE).
With REDIS_URL (or CELERY_BROKER_URL) set they talk through Redis; without it through kombu's filesystem
transport under CAIRN_DATA_DIR, so nothing else needs to run. Once the web answers, it prints the URLs, the
admin login and the demo API key (with --seed-demo, which runs seed_demo first).

Ctrl-C, SIGTERM or SIGHUP stop every child (each runs in its own process group, which is signalled as a
whole, so Celery's pool processes go too): SIGTERM first, SIGKILL after a grace period. If any child exits
on its own, the others are stopped and serve exits non-zero. On Linux the children also get SIGTERM if
serve itself is killed outright (PR_SET_PDEATHSIG), so no process outlives it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess  # nosec B404 # starts its own worker and beat processes
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from django.urls import NoReverseMatch, reverse

from checkpoints.management.commands.seed_demo import DemoSeed, seed_demo

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_SECONDS = 15.0
READY_TIMEOUT_SECONDS = 90.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    """Runs in the child before exec: ask Linux to SIGTERM it when the supervisor dies."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent_pid:  # the supervisor died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)


class Output(Protocol):
    def write(self, msg: str) -> Any: ...
    def flush(self) -> Any: ...


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen[str] | None = None
    pump: threading.Thread | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Supervisor:
    """Start children in their own process groups, prefix their output, stop them all together."""

    def __init__(self, children: list[Child], *, env: dict[str, str], out: Output) -> None:
        self.children = children
        self.env = env
        self.out = out
        self.lock = threading.Lock()
        self.stop_requested = threading.Event()

    def write(self, line: str) -> None:
        with self.lock:
            self.out.write(line if line.endswith("\n") else f"{line}\n")
            self.out.flush()

    def start(self) -> None:
        parent = os.getpid()
        # Every child is forked before any output thread starts (preexec_fn and threads do not mix).
        for child in self.children:
            child.process = subprocess.Popen(  # nosec B603 # argv lists built here from sys.executable, no shell
                child.argv,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                bufsize=1,
                start_new_session=True,
                preexec_fn=lambda: _die_with_parent(parent),
            )
        for child in self.children:
            child.pump = threading.Thread(
                target=self._pump, args=(child,), daemon=True, name=f"pump-{child.name}"
            )
            child.pump.start()

    def _pump(self, child: Child) -> None:
        assert child.process is not None and child.process.stdout is not None
        width = max(len(c.name) for c in self.children)
        for line in child.process.stdout:
            self.write(f"{child.name:<{width}} | {line.rstrip()}")

    def exited(self) -> Child | None:
        """The first child that has exited, if any."""
        return next((c for c in self.children if not c.running), None)

    def wait(self) -> Child | None:
        """Block until a stop signal arrives (None) or a child exits (that child)."""
        while not self.stop_requested.wait(0.5):
            child = self.exited()
            if child is not None:
                return child
        return None

    def stop(self, grace: float = GRACE_SECONDS) -> None:
        """SIGTERM every child, then SIGKILL its whole process group once it has exited or `grace` seconds
        have passed. Only the leader gets SIGTERM: Celery's main process stops its own pool (signalling the
        pool processes directly leaves the main process waiting for them)."""
        for child in self.children:
            if child.running:
                assert child.process is not None
                with contextlib.suppress(ProcessLookupError):
                    child.process.terminate()
        deadline = time.monotonic() + grace
        for child in self.children:
            if child.process is None:
                continue
            try:
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.write(f"{child.name} did not stop within {grace:.0f} s: killing it")
            # The group may still hold pool processes even when the leader has exited.
            self._signal_group(child, signal.SIGKILL)
            child.process.wait()
        for child in self.children:
            if child.pump is not None:
                child.pump.join(timeout=2)

    @staticmethod
    def _signal_group(child: Child, signum: int) -> None:
        if child.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.process.pid, signum)  # the child leads its own session, so pgid == pid


def wait_until_answering(url: str, supervisor: Supervisor, timeout: float = READY_TIMEOUT_SECONDS) -> bool:
    """Poll `url` until the server answers at all (any HTTP status), a child dies, or time runs out."""
    deadline = time.monotonic() + timeout
    while (
        time.monotonic() < deadline and supervisor.exited() is None and not supervisor.stop_requested.is_set()
    ):
        try:
            with urllib.request.urlopen(url, timeout=2):  # nosec B310 # url is http://host:port of the server it just started
                return True
        except urllib.error.HTTPError:
            return True  # e.g. 503 from /healthz: the server is up, a dependency is not
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    return False


def ensure_port_free(host: str, port: int) -> None:
    """Refuse to start on a taken port: the readiness probe would be answered by whoever holds it."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        # Like the server itself (SO_REUSEADDR): a port left in TIME_WAIT by a previous run is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise CommandError(f"Cannot listen on {host}:{port}: {exc.strerror}. Use --port.") from exc


def broker_description() -> str:
    url = settings.CELERY_BROKER_URL
    if url == "filesystem://":
        return f"the filesystem broker in {Path(settings.CAIRN_DATA_DIR) / 'broker'} (no server needed)"
    parts = urlsplit(url)  # never print the password a broker URL may carry
    return f"the {parts.scheme} broker at {parts.hostname}:{parts.port or 'default port'}"


class Command(BaseCommand):
    help = "Run the web server, a Celery worker and Celery beat together; Ctrl-C stops them all."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--concurrency", type=int, default=2, help="Worker processes (default 2).")
        parser.add_argument(
            "--seed-demo", action="store_true", help="Run seed_demo first and show its login and key."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not 0 < options["port"] < 65536:
            raise CommandError("--port must be between 1 and 65535.")
        if options["concurrency"] < 1:
            raise CommandError("--concurrency must be at least 1.")
        ensure_port_free(options["host"], options["port"])
        seed = seed_demo() if options["seed_demo"] else None
        # Beat keeps its schedule file there; the filesystem broker keeps its folders there.
        Path(settings.CAIRN_DATA_DIR).mkdir(parents=True, exist_ok=True)
        connections.close_all()

        base = f"http://{options['host']}:{options['port']}"
        supervisor = Supervisor(self._children(options), env=self._child_env(), out=self.stdout)
        previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}

        def request_stop(signum: int, frame: FrameType | None) -> None:
            supervisor.stop_requested.set()

        for signum in STOP_SIGNALS:
            signal.signal(signum, request_stop)
        try:
            supervisor.start()
            if wait_until_answering(f"{base}/healthz", supervisor):
                self._banner(supervisor, base, seed)
            died = supervisor.wait()
        finally:
            supervisor.write("Stopping web, worker and beat ...")
            supervisor.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if died is not None:
            assert died.process is not None
            raise CommandError(f"{died.name} exited with code {died.process.returncode}; stopped everything.")
        supervisor.write("Stopped.")

    def _children(self, options: dict[str, Any]) -> list[Child]:
        python = sys.executable
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        celery = [python, "-m", "celery", "-A", "project"]
        return [
            Child("web", [python, manage, "runserver", f"{options['host']}:{options['port']}", "--noreload"]),
            Child(
                "worker",
                [
                    *celery,
                    "worker",
                    "--loglevel",
                    "INFO",
                    "--concurrency",
                    str(options["concurrency"]),
                    "--hostname",
                    "cairn@%h",
                    # One machine, one worker: no need to discover or sync with others.
                    "--without-gossip",
                    "--without-mingle",
                ],
            ),
            Child("beat", [*celery, "beat", "--loglevel", "INFO"]),
        ]

    @staticmethod
    def _child_env() -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        # The children import `project` whatever the working directory.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(settings.BASE_DIR), env.get("PYTHONPATH")]))
        return env

    def _banner(self, supervisor: Supervisor, base: str, seed: DemoSeed | None) -> None:
        lines = [
            "",
            "=" * 78,
            "Cairn is running.",
            f"  API        {base}/api/v1/   (interactive docs: {base}/api/v1/docs/)",
        ]
        with contextlib.suppress(NoReverseMatch):  # the dashboard app may not be installed
            lines.append(f"  Dashboard  {base}{reverse('dashboard:home')}")
        lines.append(f"  Admin      {base}/admin/")
        if seed is not None:
            lines += [f"  {line}" for line in seed.credential_lines()]
        interval = settings.CELERY_BEAT_SCHEDULE["retention-sweep"]["schedule"]
        lines += [
            f"  Background celery worker + beat on {broker_description()}",
            f"             retention sweep every {interval:g} s",
            "Press Ctrl-C to stop.",
            "=" * 78,
            "",
        ]
        for line in lines:
            supervisor.write(line)
