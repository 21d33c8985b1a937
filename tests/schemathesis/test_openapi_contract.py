"""Schemathesis over `/api/v1/schema/`, authenticated with a real admin key, against gunicorn: every
operation, thousands of generated and mutated requests (examples, coverage, fuzzing and stateful phases).
Zero server errors, and every response — status, content type, headers, body — as the document describes it.

Configuration (written next to the run, `schemathesis.toml`):
- every check but `positive_data_acceptance`: some valid-looking requests are refused by rules OpenAPI cannot
  state (an empty scope, a NUL in a tag, a checkpoint that expired), and those refusals are the point;
- `negative_data_rejection` also accepts 409/410/412: a resource's state is decided before its body is read
  (another workspace's checkpoint is a 404 whatever the body, an expired one a 410);
- path ids come from the seeded objects half of the time (the other half is generated), and `?wait=` is 0
  (no worker runs here: a medallion checkpoint would otherwise wait its full 30 s for nothing);
- one worker thread (see the `--workers` comment): two could crash schemathesis itself, now and then.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.schemathesis.conftest import ContractServer

pytestmark = pytest.mark.slow

SEED = 20260501
MAX_EXAMPLES = 25
MIN_CASES = 2000
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


def config(ids: dict[str, list[str]]) -> str:
    dictionaries = "\n".join(
        f"[dictionaries.{kind}]\nvalues = {json.dumps(values)}\n" for kind, values in ids.items()
    )
    parameters = {
        "path.thread_id": "threads",
        "path.checkpoint_id": "checkpoints",
        "path.message_id": "messages",
        "path.medallion_id": "medallions",
        "path.job_id": "jobs",
    }
    bindings = "\n".join(
        f'"{key}" = {{ dictionary = "{kind}", probability = 0.5 }}' for key, kind in parameters.items()
    )
    return f"""
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 410, 412, 413, 415, 429]

{dictionaries}
[parameters]
{bindings}
"query.wait" = 0
"""


def test_every_operation_answers_as_the_schema_says_with_no_server_error(
    contract_server: ContractServer,
) -> None:
    root = contract_server.root
    (root / "schemathesis.toml").write_text(config(contract_server.ids))
    result = subprocess.run(
        [
            str(SCHEMATHESIS), "--config-file", str(root / "schemathesis.toml"), "run",
            f"{contract_server.url}/api/v1/schema/",
            "--header", f"Authorization: Bearer {contract_server.key}",
            "--checks", "all",
            "--exclude-checks", "positive_data_acceptance",
            "--phases", "examples,coverage,fuzzing,stateful",
            "--max-examples", str(MAX_EXAMPLES),
            "--seed", str(SEED),
            # One worker: on CPython 3.11 two threads that build syntax trees at the same time (Hypothesis
            # parses a source file to describe a lambda) share one depth counter, and the parse then fails
            # with "AST constructor recursion depth mismatch", now and then, inside schemathesis.
            "--workers", "1",
            "--request-timeout", "30",
            "--report", "json", "--report-dir", str(root / "report"),
        ],
        cwd=root, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    reports = sorted((root / "report").glob("*.json"))
    assert reports, output
    report = json.loads(reports[-1].read_text())
    assert report["failures"] == [] and report["errors"] == [], output
    assert result.returncode == 0, output
    tested = report["operations"]
    assert tested["selected"] == tested["tested"] and tested["selected"] >= 40, tested
    assert report["test_cases"]["generated"] >= MIN_CASES, report["test_cases"]
