"""Every runnable example under checkpoints/sdk/examples/, run as its own process (clean environment, no
Django settings) against a live server; and the SDK importing without Django configured."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.medallions.fixtures import eager  # noqa: F401  (fixture: jobs run when published)
from tests.sdk.conftest import PYTHON, REPO, run_python, subprocess_env

pytestmark = pytest.mark.slow


def run(module: str, env: dict[str, str], *args: str) -> str:
    return run_python(PYTHON, ["-m", f"checkpoints.sdk.examples.{module}", *args], env, REPO)


# Each example, and lines its output must contain.
EXAMPLE_OUTPUTS = {
    "quickstart": (
        "checksum verified: True",
        "handed to writer; writer's inbox holds 1 checkpoint(s)",
        "expired: tombstone kept",
    ),
    "checkpnt_example": (
        "restored step 7: ['result from step 7']",
        "handed to approval-agent from processor, metadata {'customer': 'acme'}",
        "step 7: after_tool_call",
    ),
    "pyagenity_example": (
        "state: {'context': ['asked about weather'], 'step': 1}",
        'found: ["What\'s the weather in Lyon?"]',
        "alice's threads: ['Weather inquiry']",
        "mallory sees: None",
    ),
    "agent_checkpoint_example": (
        "after rollback: 13 tokens, history ['Hello there', 'How are you?']",
        "restored 6 messages, topics ['hello', 'how', 'step']",
    ),
}


@pytest.mark.parametrize("module", list(EXAMPLE_OUTPUTS))
def test_the_example_runs(module: str, cairn_url: str, cairn_key: str) -> None:
    out = run(module, subprocess_env(cairn_url, cairn_key))
    for line in EXAMPLE_OUTPUTS[module]:
        assert line in out


@pytest.mark.usefixtures("eager")
def test_the_medallion_example_runs(cairn_url: str, cairn_key: str) -> None:
    out = run("medallion_example", subprocess_env(cairn_url, cairn_key))
    assert "medallions before: 0" in out
    assert "updated the same medallion: v2" in out
    assert out.count("\n- ") == 1


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
