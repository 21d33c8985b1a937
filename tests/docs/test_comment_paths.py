"""Code comments and docstrings that point at the documentation point at files that exist."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.pages import REPO
from tests.docs.test_pages import WORK_WORDING

pytestmark = pytest.mark.one_backend  # pure code: the same on either backend (tests/conftest.py)

SOURCES = ["checkpoints", "project", "tests", "tools"]
DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[A-Za-z0-9_./-]*[A-Za-z0-9_/]")


def comments_and_docstrings(source: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python file; other strings are data, not prose."""
    text = source.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                yield node.body[0].lineno, docstring


def test_every_docs_path_named_in_the_code_exists() -> None:
    named = 0
    missing = []
    for root in SOURCES:
        for source in sorted((REPO / root).rglob("*.py")):
            for line, prose in comments_and_docstrings(source):
                for path in DOCS_PATH.findall(prose):
                    named += 1
                    if not (REPO / path).exists():
                        missing.append(f"{source.relative_to(REPO)}:{line}: {path}")
    assert missing == []
    assert named > 50  # the comments do point at the docs


def test_a_path_that_does_not_exist_is_caught(tmp_path: Path) -> None:
    source = tmp_path / "module.py"
    source.write_text('"""See docs/nowhere.md."""\n\nDATA = "docs/data.md"  # and docs/storage.md\n')
    found = [path for _line, prose in comments_and_docstrings(source) for path in DOCS_PATH.findall(prose)]
    assert sorted(found) == ["docs/nowhere.md", "docs/storage.md"]
    assert not (REPO / "docs/nowhere.md").exists()


def test_comments_and_docstrings_speak_of_the_product_only() -> None:
    """No word about how the work was organised (sessions, rounds, issues) in the code's prose either."""
    found = []
    for root in SOURCES:
        for source in sorted((REPO / root).rglob("*.py")):
            for line, prose in comments_and_docstrings(source):
                found += [f"{source.relative_to(REPO)}:{line}: {hit}" for hit in WORK_WORDING.findall(prose)]
    assert found == []
