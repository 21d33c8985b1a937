"""Static security checks, in the suite so they cannot rot: Django's deployment checklist passes with a
production environment, and bandit finds nothing that is not justified inline."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("checkpoints", "project")
NOSEC = re.compile(r"#\s*nosec\b(?P<rest>.*)$")
JUSTIFIED = re.compile(r"^(?: B\d{3})+ # \S.{8,}$")  # `# nosec B608 # why it is safe`

SETUP = "import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'project.settings'; django.setup()"
BANDIT = Path(sys.executable).parent / "bandit"

pytestmark = pytest.mark.slow


def production_env(tmp_path: Path) -> dict[str, str]:
    """What a production deployment sets (see .env.example): no DEBUG, a real secret, a host, TLS."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CAIRN_", "CELERY_"))}
    env.update(
        {
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "cairn.example.com",
            "CSRF_TRUSTED_ORIGINS": "https://cairn.example.com",
            "BEHIND_TLS_PROXY": "true",
            "SECURE_SSL_REDIRECT": "true",
            "SECURE_HSTS_SECONDS": "31536000",
            "SQLITE_PATH": str(tmp_path / "db.sqlite3"),
            "CAIRN_DATA_DIR": str(tmp_path / "data"),
            "PYTHONPATH": str(REPO),
        }
    )
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def test_the_deployment_checklist_passes_with_a_production_environment(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "check", "--deploy", "--fail-level", "WARNING"],
        cwd=tmp_path, env=production_env(tmp_path), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_deployment_checklist_catches_a_development_setting(tmp_path: Path) -> None:
    env = {**production_env(tmp_path), "SECURE_SSL_REDIRECT": "false"}
    result = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "check", "--deploy", "--fail-level", "WARNING"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode != 0 and "security.W008" in result.stderr


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path: Path) -> None:
    env = {**production_env(tmp_path), "SECRET_KEY": ""}
    result = subprocess.run(
        [sys.executable, "-c", SETUP],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode != 0 and "SECRET_KEY is not set" in result.stderr


def test_bandit_finds_nothing_unjustified() -> None:
    result = subprocess.run(
        [str(BANDIT), "-c", "pyproject.toml", "-r", *SCANNED, "-f", "json", "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    report = json.loads(result.stdout)
    findings = [
        f"{r['filename']}:{r['line_number']} {r['test_id']} {r['issue_text']}" for r in report["results"]
    ]
    assert findings == [] and report["errors"] == [], "\n".join(findings)
    assert result.returncode == 0


def test_every_nosec_names_its_check_and_says_why() -> None:
    unjustified = []
    for directory in SCANNED:
        for path in sorted((REPO / directory).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                match = NOSEC.search(line)
                if match and not JUSTIFIED.match(match.group("rest")):
                    unjustified.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert unjustified == [], "write `# nosec B123 # why it is safe`:\n" + "\n".join(unjustified)
