"""constraints.txt: every package `.venv` is built from has one exact version there, inside pyproject.toml's
ranges, and the running interpreter has exactly those versions (docs/development.md, "Dependencies")."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")

pytestmark = pytest.mark.one_backend


def pins() -> dict[str, str]:
    lines = (REPO / "constraints.txt").read_text().splitlines()
    found: dict[str, str] = {}
    for line in lines:
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"constraints.txt: not `name==version`: {line!r}"
        found[canonicalize_name(match[1])] = match[2]
    return found


def requirements() -> list[Requirement]:
    """What `make` installs: the base dependencies and those of the extras `server`, `dev` pulls in."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    named = [
        *project["dependencies"],
        *(req for extra in ("server", "langgraph", "docs", "dev") for req in extras[extra]),
    ]
    return [req for req in map(Requirement, named) if not req.name.startswith("cairn")]


def test_every_requirement_is_pinned_within_its_range() -> None:
    pinned = pins()
    for requirement in requirements():
        if requirement.marker and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} is not in constraints.txt (make lock)"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"constraints.txt pins {requirement.name}=={pinned[name]}, outside pyproject's {requirement}"
        )


def test_the_interpreter_runs_the_pinned_versions() -> None:
    pinned = pins()
    for name in ("django", "djangorestframework", "psycopg", "gunicorn", "redis", "celery", "langgraph"):
        assert importlib.metadata.version(name) == pinned[name], f"{name}: run `make .venv/.installed`"
