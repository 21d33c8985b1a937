"""Every code block marked runnable in README.md and docs/ (a `<!-- runnable -->` line before its fence) runs
against a live server, as a reader would run it: shell blocks under `bash -euo pipefail` (their `curl -f`
fails on any HTTP error), Python blocks as their own process (they assert what they show). Both read the
server's address and a key from CAIRN_URL and CAIRN_API_KEY."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.docs.pages import README, CodeBlock, published_pages, runnable_blocks
from tests.medallions.fixtures import eager  # noqa: F401  (fixture: jobs run when published)
from tests.sdk.conftest import PYTHON, subprocess_env

pytestmark = pytest.mark.slow

BLOCKS = [block for page in published_pages() for block in runnable_blocks(page)]


def test_the_readme_and_the_docs_have_runnable_examples() -> None:
    """The marker is what puts an example under test: the README's three ways in, and the docs' own."""
    languages_in_readme = [block.language for block in BLOCKS if block.page == README]
    assert languages_in_readme == ["sh", "python", "python"]
    assert len([block for block in BLOCKS if block.page != README]) >= 5


@pytest.mark.usefixtures("eager")
@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_the_example_runs_against_a_live_server(
    block: CodeBlock, cairn_url: str, cairn_key: str, tmp_path: Path
) -> None:
    env = subprocess_env(cairn_url, cairn_key)
    if block.language == "sh":
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    else:
        command = [PYTHON, "-c", block.code]
    done = subprocess.run(  # nosec B603 # the repository's own examples
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


def test_a_failing_request_fails_the_example(cairn_url: str, tmp_path: Path) -> None:
    """The runner is not blind: a block whose request is refused (a wrong key: 401) fails."""
    block = next(block for block in BLOCKS if block.page == README and block.language == "sh")
    env = subprocess_env(cairn_url, "cairn_wrong_key")
    done = subprocess.run(  # nosec B603 # the repository's own example
        ["bash", "-euo", "pipefail", "-c", block.code], env=env, cwd=tmp_path, capture_output=True, timeout=60
    )
    assert done.returncode != 0
    assert b"401" in done.stderr  # curl -f names the status it refused
