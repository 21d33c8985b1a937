"""The configuration reference (docs/configuration.md) lists exactly the environment variables
project/settings.py reads: a variable added to the settings without a line in the docs, or documented but
no longer read, fails here."""

from __future__ import annotations

import ast
import re

from tests.docs.pages import DOCS, REPO

SETTINGS = REPO / "project" / "settings.py"
REFERENCE = DOCS / "configuration.md"
# Read by the Procfile's commands, not by the settings; documented in their own section.
PROCESS_SECTION = "## Process commands"
# django-environ methods that parse a value rather than read a variable.
NOT_A_READ = {"db_url_config", "read_env"}


def variables_read_by_settings() -> set[str]:
    tree = ast.parse(SETTINGS.read_text(encoding="utf-8"))
    names: set[str] = set()
    through_loop_variables: set[str] = set()
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "env"
            and node.func.attr not in NOT_A_READ
            and node.args
        ):
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            names.add(first.value)
        elif isinstance(first, ast.Name):
            through_loop_variables.add(first.id)
        else:
            raise AssertionError(f"settings.py line {node.lineno}: a variable name this test cannot read")
    # `env.float(interval, ...) for entry, task, interval, default in (...)`: the names the loop binds.
    resolved: set[str] = set()
    for comprehension in ast.walk(tree):
        if not (isinstance(comprehension, ast.comprehension) and isinstance(comprehension.target, ast.Tuple)):
            continue
        for position, target in enumerate(comprehension.target.elts):
            if isinstance(target, ast.Name) and target.id in through_loop_variables:
                assert isinstance(comprehension.iter, ast.Tuple | ast.List)
                for row in comprehension.iter.elts:
                    assert isinstance(row, ast.Tuple)
                    value = row.elts[position]
                    assert isinstance(value, ast.Constant) and isinstance(value.value, str)
                    names.add(value.value)
                resolved.add(target.id)
    assert resolved == through_loop_variables
    return names


def variables_documented() -> set[str]:
    text = REFERENCE.read_text(encoding="utf-8").split(PROCESS_SECTION)[0]
    return set(re.findall(r"(?m)^\| `([A-Z][A-Z0-9_]+)`", text))


def test_the_settings_are_read_as_expected() -> None:
    read = variables_read_by_settings()
    # Spot checks of each way settings.py reads a variable: plain, in a dict, through the beat schedule loop.
    assert {
        "SECRET_KEY",
        "CAIRN_LLM_MODEL",
        "CAIRN_SWEEP_INTERVAL_SECONDS",
        "CELERY_VISIBILITY_TIMEOUT",
    } <= read
    assert len(read) > 40


def test_every_variable_the_settings_read_is_documented() -> None:
    undocumented = sorted(variables_read_by_settings() - variables_documented())
    assert undocumented == [], f"add a row for each to a table of {REFERENCE.relative_to(REPO)}"


def test_every_documented_variable_is_read_by_the_settings() -> None:
    unread = sorted(variables_documented() - variables_read_by_settings())
    assert unread == [], f"project/settings.py no longer reads these: remove them from {REFERENCE.name}"
