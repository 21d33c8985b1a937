"""`make run`'s last step for real: `manage.py serve --seed-demo` in a temporary directory, on a free port,
in the embedded mode (SQLite file, filesystem broker, no server of any kind).

It must answer HTTP, print a key that works, tombstone a checkpoint saved with `ttl_seconds: 2` on the beat
schedule with no manual step (every 60 s by default; the test sets 3 s through the documented setting, so it
waits seconds rather than a minute), and stop everything on Ctrl-C leaving no process.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from checkpoints.bench.server import PYTHON, REPO, free_port
from tests.jobs.stack import Stack, stack_env, wait_for

pytestmark = pytest.mark.slow

SWEEP_EVERY_SECONDS = 3
KEY = re.compile(r"API key \(admin scope, shown once\): (cairn_\S+)")


class Output:
    """Collects a process's output lines from a background thread."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self.thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def children_of(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The command name is in parentheses and may contain spaces: fields resume after the last ")".
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found.append(int(entry.name))
    return found


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Output, int, Path]]:
    env = stack_env(tmp_path, CAIRN_SWEEP_INTERVAL_SECONDS=str(SWEEP_EVERY_SECONDS))
    Stack(tmp_path, env).manage("migrate", "--no-input")
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, str(REPO / "manage.py"), "serve", "--seed-demo", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = Output(process)
    try:
        yield process, output, port, tmp_path / "db.sqlite3"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_it_serves_prints_a_working_key_sweeps_on_schedule_and_stops_cleanly(
    serve: tuple[subprocess.Popen[str], Output, int, Path],
) -> None:
    process, output, port, database = serve
    wait_for(
        lambda: output.text, lambda text: "Press Ctrl-C to stop." in text, timeout=120, what="the banner"
    )
    base = f"http://127.0.0.1:{port}"
    assert f"API        {base}/api/v1/" in output.text
    assert "Admin login: admin / " in output.text
    assert (
        "the filesystem broker" in output.text
        and f"retention sweep every {SWEEP_EVERY_SECONDS} s" in output.text
    )
    key_match = KEY.search(output.text)
    assert key_match, output.text

    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {key_match.group(1)}"}, timeout=10
    ) as api:
        assert httpx.get(f"{base}/healthz").json() == {"database": "ok", "cache": "ok", "broker": "ok"}
        assert api.get("/api/v1/retention/").status_code == 200
        saved = api.post(
            "/api/v1/threads/e2e/checkpoints/", json={"agent_id": "a", "state": {"x": 1}, "ttl_seconds": 2}
        )
        assert saved.status_code == 201, saved.text
        checkpoint_id = saved.json()["checkpoint_id"]
        saved_at = time.monotonic()

        def stored() -> tuple[object, object]:
            with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
                row = db.execute(
                    "SELECT state, expired_at FROM checkpoints_checkpoint WHERE checkpoint_id = ?",
                    (checkpoint_id,),
                ).fetchone()
            return row[0], row[1]

        # Unreadable at once (read-time expiry) ...
        wait_for(
            lambda: api.get(f"/api/v1/threads/e2e/checkpoints/{checkpoint_id}/").status_code,
            lambda s: s == 410,
        )
        # ... and a real tombstone once the scheduled sweep has run: no manual step.
        state, _ = wait_for(stored, lambda row: row[1] is not None, timeout=60, what="the scheduled sweep")
        assert state is None
        assert time.monotonic() - saved_at < 30

    children = children_of(process.pid)
    assert len(children) == 3, children  # web, worker, beat (each leading its own process group)
    process.send_signal(signal.SIGINT)  # Ctrl-C
    assert process.wait(timeout=60) == 0, output.text[-3000:]
    output.thread.join(timeout=5)
    assert output.lines[-1] == "Stopped."
    wait_for(lambda: [pgid for pgid in children if group_alive(pgid)], lambda alive: not alive, timeout=10)


@pytest.mark.skipif("CAIRN_SWEEP_INTERVAL_SECONDS" in os.environ, reason="the environment sets the interval")
def test_the_default_beat_schedule_sweeps_every_minute() -> None:
    from django.conf import settings

    assert settings.CELERY_BEAT_SCHEDULE["retention-sweep"]["schedule"] == 60.0
    assert settings.CELERY_BEAT_SCHEDULE["store-sweep"]["schedule"] == 60.0
