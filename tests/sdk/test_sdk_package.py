"""`pip install cairn` is the SDK alone: installed into a fresh virtualenv from the repository's source, it
pulls httpx and nothing of the server (no Django), and the quickstart runs against a live server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.conftest import REPO, run_python

pytestmark = pytest.mark.one_backend  # what the package installs: the same on either backend

# What the server needs and the SDK must never pull in.
SERVER_DISTRIBUTIONS = {
    "django",
    "djangorestframework",
    "django-filter",
    "drf-spectacular",
    "celery",
    "redis",
    "psycopg",
    "gunicorn",
    "whitenoise",
    "jsonpatch",
}
# The files a source install reads; copied, so the build never writes into the working tree.
SOURCE = ("pyproject.toml", "README.md", "checkpoints", "project")


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_sdk_depends_on_its_two_http_clients_and_tenacity_only_and_the_server_is_an_extra() -> None:
    project = pyproject()["project"]
    assert project["dependencies"] == ["httpx>=0.28,<1", "aiohttp>=3.10,<4", "tenacity>=9.0,<10"]
    extras = project["optional-dependencies"]
    server = {requirement.split("[")[0].split(">")[0].lower() for requirement in extras["server"]}
    assert server >= SERVER_DISTRIBUTIONS
    # The dev tools bring the server, the LangGraph saver and the documentation site's tools.
    assert "cairn[server,langgraph,docs]" in extras["dev"]
    assert {requirement.split(">")[0] for requirement in extras["docs"]} >= {"mkdocs", "mkdocs-material"}
    # `make run` / `make test` install the server with the dev tools, at the versions constraints.txt pins.
    assert "pip install --quiet -c constraints.txt -e '.[server,dev]'" in (REPO / "Makefile").read_text()


def copy_source(target: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    target.mkdir()
    for name in SOURCE:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, target / name, ignore=ignore)
        else:
            shutil.copy2(path, target / name)
    return target


@pytest.mark.slow
def test_the_bare_package_installs_without_the_server_and_runs_the_quickstart(
    tmp_path: Path, cairn_url: str, cairn_key: str
) -> None:
    source = copy_source(tmp_path / "source")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    # No PYTHONPATH: the child sees only what pip installed. HOME stays, so pip's wheel cache is reused.
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path))}
    env.update({key: value for key, value in os.environ.items() if key.startswith("PIP_")})
    run_python(python, ["-m", "pip", "install", "--quiet", str(source)], env, tmp_path, timeout=600)

    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=json"], env=env, capture_output=True, text=True, check=True
    )
    distributions = {row["name"].lower() for row in json.loads(listed.stdout)}
    assert {"cairn", "httpx"} <= distributions
    assert not distributions & SERVER_DISTRIBUTIONS

    probe = "import importlib.util, checkpoints.sdk; print(importlib.util.find_spec('django'))"
    done = subprocess.run([python, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "None"), done.stderr

    quickstart_env = {**env, "CAIRN_URL": cairn_url, "CAIRN_API_KEY": cairn_key, "PYTHONUNBUFFERED": "1"}
    quickstart = run_python(python, ["-m", "checkpoints.sdk.examples.quickstart"], quickstart_env, tmp_path)
    assert "checksum verified: True" in quickstart
    assert "handed to writer; writer's inbox holds 1 checkpoint(s)" in quickstart
    assert "expired: tombstone kept" in quickstart
    where = run_python(
        python, ["-c", "import checkpoints.sdk; print(checkpoints.sdk.__file__)"], env, tmp_path
    )
    assert where.startswith(str(venv)), where
