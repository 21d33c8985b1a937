"""Every runnable example under checkpoints/sdk/examples/, run as its own process (clean environment, no
Django settings) against a live server; and the SDK importing without Django configured."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.medallions.fixtures import eager  # noqa: F401  (fixture: jobs run when published)
from tests.sdk.conftest import PYTHON, REPO, subprocess_env

pytestmark = pytest.mark.slow


def run(module: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [PYTHON, "-m", f"checkpoints.sdk.examples.{module}", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_quickstart_runs(cairn_url: str, cairn_key: str) -> None:
    out = run("quickstart", subprocess_env(cairn_url, cairn_key))
    assert "checksum verified: True" in out
    assert "handed to writer; writer's inbox holds 1 checkpoint(s)" in out
    assert "expired: tombstone kept" in out


def test_the_checkpnt_example_runs(cairn_url: str, cairn_key: str) -> None:
    out = run("checkpnt_example", subprocess_env(cairn_url, cairn_key))
    assert "restored step 7: ['result from step 7']" in out
    assert "handed to approval-agent from processor, metadata {'customer': 'acme'}" in out
    assert "step 7: after_tool_call" in out


@pytest.mark.usefixtures("eager")
def test_the_medallion_example_runs(cairn_url: str, cairn_key: str) -> None:
    out = run("medallion_example", subprocess_env(cairn_url, cairn_key))
    assert "medallions before: 0" in out
    assert "updated the same medallion: v2" in out
    assert out.count("\n- ") == 1


def test_the_pyagenity_example_runs(cairn_url: str, cairn_key: str) -> None:
    out = run("pyagenity_example", subprocess_env(cairn_url, cairn_key))
    assert "state: {'context': ['asked about weather'], 'step': 1}" in out
    assert 'found: ["What\'s the weather in Lyon?"]' in out
    assert "alice's threads: ['Weather inquiry']" in out
    assert "mallory sees: None" in out


def test_the_agent_checkpoint_example_runs(cairn_url: str, cairn_key: str) -> None:
    out = run("agent_checkpoint_example", subprocess_env(cairn_url, cairn_key))
    assert "after rollback: 13 tokens, history ['Hello there', 'How are you?']" in out
    assert "restored 6 messages, topics ['hello', 'how', 'step']" in out


def test_the_langgraph_example_runs_to_completion_across_three_processes(
    cairn_url: str, cairn_key: str
) -> None:
    env = subprocess_env(cairn_url, cairn_key)
    assert "started; next=['review']" in run("langgraph_agent", env, "example-thread")
    assert "resumed after review; next=[]" in run("langgraph_agent", env, "example-thread")
    final = run("langgraph_agent", env, "example-thread")
    assert "done; next=[] results={'add': 13, 'multiply': 42}" in final
    assert "ai: Results {'add': 13, 'multiply': 42} kept." in final


def test_the_sdk_imports_without_django(tmp_path: Any) -> None:
    probe = "\n".join(
        [
            "import sys",
            "import checkpoints.sdk, checkpoints.sdk.checkpnt, checkpoints.sdk.medallion",
            "import checkpoints.sdk.pyagenity, checkpoints.sdk.agent_checkpoint, checkpoints.sdk.langgraph",
            "roots = ('django', 'rest_framework', 'project')",
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in roots)",
            "inside = ('checkpoints.models', 'checkpoints.services', 'checkpoints.api')",
            "server = sorted(m for m in sys.modules if m.startswith(inside))",
            "print(loaded, server)",
        ]
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [PYTHON, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] []"
