"""MkDocs hook: before each build, write the API's OpenAPI document to build/openapi.json with
drf-spectacular (`manage.py spectacular`), so docs/api/reference.md renders the schema the server serves,
never a hand copy. The file is generated, outside docs/ and git-ignored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OPENAPI = ROOT / "build" / "openapi.json"


def on_pre_build(config: Any, **kwargs: Any) -> None:
    OPENAPI.parent.mkdir(exist_ok=True)
    # Building the schema reads the settings only: it needs a SECRET_KEY, never a database connection.
    env = {**os.environ, "SECRET_KEY": os.environ.get("SECRET_KEY") or "docs-build-only"}
    command = [sys.executable, "manage.py", "spectacular", "--format", "openapi-json"]
    command += ["--file", str(OPENAPI), "--validate", "--fail-on-warn"]
    subprocess.run(command, cwd=ROOT, env=env, check=True)  # nosec B603 # a fixed argv, no shell
