"""PyAgenity itself on Cairn: with PyAgenity 0.3 installed (it needs Python 3.12+, so these tests drive a
Python 3.12 virtualenv cached under .cairn/), `CairnCheckpointer` is PyAgenity's `BaseCheckpointer`, a real
graph is interrupted, its process killed, and a fresh process resumes it; PyAgenity's `Message`s, states and
`ThreadInfo` go through unchanged.

No Python 3.12+ on the machine: skipped, unless CAIRN_REQUIRE_PYAGENITY=1 (CI sets it), then failed.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.conftest import REPO, subprocess_env

pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("pyagenity_child.py")
RESULT = "RESULT "  # the prefix of the child's report line
VENVS = REPO / ".cairn" / "venvs"


def python_312() -> str | None:
    """A working Python 3.12+ interpreter: on PATH, or installed by pyenv (its shims may not run)."""
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates = [
        *sorted(glob.glob(f"{pyenv_root}/versions/3.12*/bin/python")),
        *filter(None, (shutil.which(name) for name in ("python3.12", "python3.13"))),
        *sorted(glob.glob(f"{pyenv_root}/versions/3.13*/bin/python")),
    ]
    for candidate in candidates:
        probe = subprocess.run(
            [candidate, "-c", "import sys, venv; sys.exit(sys.version_info < (3, 12))"],
            capture_output=True,
            timeout=60,
        )
        if probe.returncode == 0:
            return candidate
    return None


def requirements() -> list[str]:
    """What the `pyagenity` extra and the SDK need (read from pyproject.toml, so the venv follows it)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extra = [r.split(";")[0].strip() for r in project["optional-dependencies"]["pyagenity"]]
    return [*project["dependencies"], *extra]


@pytest.fixture(scope="session")
def pyagenity_python() -> str:
    """The cached venv's interpreter, (re)built when the requirements change."""
    interpreter = python_312()
    if interpreter is None:
        reason = "no Python 3.12+ on this machine (PyAgenity 0.3 needs one)"
        if os.environ.get("CAIRN_REQUIRE_PYAGENITY") == "1":
            pytest.fail(f"CAIRN_REQUIRE_PYAGENITY=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    wanted = requirements()
    key = hashlib.sha256(json.dumps([interpreter, wanted]).encode()).hexdigest()[:12]
    venv = VENVS / f"pyagenity-{key}"
    python = venv / "bin" / "python"
    VENVS.mkdir(parents=True, exist_ok=True)
    # Both suites may run at once (.ci/run): one builds the venv while the other waits for it.
    with open(VENVS / f"pyagenity-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "ready").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([interpreter, "-m", "venv", str(venv)], check=True, timeout=300)
            subprocess.run(
                [str(python), "-m", "pip", "install", "--quiet", *wanted], check=True, timeout=900, cwd=venv
            )
            (venv / "ready").touch()
    return str(python)


def child(python: str, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [python, str(CHILD), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    [line] = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    return dict(json.loads(line.removeprefix(RESULT)))


def test_a_graph_interrupted_then_killed_resumes_in_a_new_process(
    pyagenity_python: str, cairn_url: str, cairn_key: str
) -> None:
    env = subprocess_env(cairn_url, cairn_key)
    first = subprocess.Popen(
        [pyagenity_python, str(CHILD), "start", "trip-1"],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None
        for line in first.stdout:  # until the child reports; then it hangs, waiting to be killed
            if line.startswith(RESULT):
                break
        else:
            pytest.fail(first.stderr.read() if first.stderr else "no report")
        interrupted = json.loads(line.removeprefix(RESULT))
    finally:
        first.send_signal(signal.SIGKILL)  # no release, no shutdown: as a crashed worker
        first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    assert interrupted == {
        "step": "interrupted",
        "is_base": True,
        "messages": ["book a flight", "plan after 1 message(s)"],
        "status": "interrupted_before",
        "node": "ACT",
    }

    resumed = child(pyagenity_python, env, "resume", "trip-1")
    assert resumed["was"] == "interrupted_before"
    assert resumed["messages"] == ["approved", "acted on: approved"]
    assert resumed["status"] == "completed"
    assert resumed["context"] == [
        "book a flight",
        "plan after 1 message(s)",
        "approved",
        "acted on: approved",
    ]
    # PyAgenity's own Messages. PyAgenity stores a run's messages when the run completes (a paused run's
    # live in its state's context, above).
    assert resumed["stored"] == [
        ["Message", "user", "approved"],
        ["Message", "assistant", "acted on: approved"],
    ]
    assert resumed["released"] is True


def test_pyagenity_objects_go_through_unchanged(
    pyagenity_python: str, cairn_url: str, cairn_key: str
) -> None:
    out = child(pyagenity_python, subprocess_env(cairn_url, cairn_key), "objects", "objects-1")
    assert (out["setup"], out["put"], out["is_message"], out["same_id"]) == (True, True, True, True)
    assert out["blocks"] == [
        {"type": "text", "text": "Checking the weather.", "annotations": []},
        {"type": "tool_call", "id": "call-1", "name": "weather", "args": {"city": "Lyon"}, "tool_type": None},
    ]
    assert out["tools_calls"] == [{"id": "call-1", "type": "function", "function": {"name": "weather"}}]
    assert out["reasoning"] == "the user asked"
    assert out["metadata"] == {"node": "chat"}
    assert out["typed"] == ["ReviewState", "alice"]  # config["state_class"]
    assert out["plain"] == "AgentState"  # the default, as PyAgenity's
    assert out["thread_put"] is True
    assert out["thread"]["thread_id"] == "objects-1" and out["thread"]["user_id"] is None  # as it was put
    assert (out["cleaned"], out["released"]) == (True, True)


def test_it_returns_what_was_stored_as_pyagenitys_own_checkpointer_does(
    pyagenity_python: str, cairn_url: str, cairn_key: str
) -> None:
    """A state saved as a plain dict comes back as that dict (not an empty AgentState), and `aget_thread`
    returns the ThreadInfo as it was put: the same answers as PyAgenity's InMemoryCheckpointer."""
    out = child(pyagenity_python, subprocess_env(cairn_url, cairn_key), "parity", "parity-1")
    assert out["cairn"]["plain"] == ["dict", {"step": 1, "notes": ["a"]}]
    assert out["cairn"]["model"] == ["AgentState", ["hi"]]
    assert out["cairn"]["named"] == [
        "ThreadInfo",
        {
            "thread_id": "parity-1",
            "thread_name": "Trip",
            "user_id": None,
            "metadata": {"tags": ["x"]},
            "updated_at": None,
            "run_id": "r-1",
        },
    ]
    assert out["cairn"]["bare"][1] == {
        "thread_id": "parity-1",
        "thread_name": None,
        "user_id": None,
        "metadata": None,
        "updated_at": None,
        "run_id": None,
    }
    assert out["cairn"] == out["seed"]
