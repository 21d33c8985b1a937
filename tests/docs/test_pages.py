"""The README stays a one-screen introduction whose links resolve, and the published pages speak of the
product only: no word about how the work was organised (sessions, rounds, issues) and no commit hashes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs.pages import CHANGELOG, DOCS, README, REPO, published_pages, relative_links

README_MAX_LINES = 250

WORK_WORDING = re.compile(
    # "the next session" is the medallions' own word (an agent's run); ordinals and "this" are not.
    r"\b(?:this|that|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)\s+(?:session|round)s?\b"
    r"|\b(?:last|next|previous|earlier|later)\s+rounds?\b"
    r"|\bsessions?\s+(?:of\s+)?\d"
    r"|\brounds?[\s-]+\d"
    r"|\brounds?\s+(?:ago|before)\b"
    r"|\bissues?\s+#?\d"
    r"|\bthe\s+issue(?:'s)?\b",
    re.IGNORECASE,
)
HEX_TOKEN = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def test_the_readme_fits_on_a_few_screens() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES


@pytest.mark.parametrize("page", [README, CHANGELOG], ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    """mkdocs build --strict checks the links between docs/ pages; the README and the changelog are read on
    their own (on a code host, or in a checkout), so their links are checked here."""
    links = relative_links(page)
    missing = [link for link in links if not (page.parent / link.split("#")[0]).exists()]
    assert links if page == README else True
    assert missing == []


def test_the_readme_links_every_docs_section() -> None:
    linked = {(README.parent / link.split("#")[0]).resolve() for link in relative_links(README)}
    for page in (
        "getting-started.md",
        "concepts.md",
        "api/index.md",
        "sdk.md",
        "operating.md",
        "security.md",
    ):
        assert (DOCS / page).resolve() in linked, page


@pytest.mark.parametrize("page", published_pages(), ids=lambda page: str(page.relative_to(REPO)))
def test_the_page_speaks_of_the_product_only(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert WORK_WORDING.findall(text) == []


def test_the_wording_check_catches_what_it_is_for() -> None:
    for phrase in (
        "this session's runs",
        "the sixth session of 2026-11-28",
        "round 2",
        "red-team round 2",
        "two rounds ago",
        "what earlier rounds fixed",
        "issue 41",
        "the issue's targets",
        "Session 3",
    ):
        assert WORK_WORDING.search(phrase), phrase
    for phrase in (
        "checkpoint_session(store, llm)",
        "a round trip",
        "four rounds per case",
        "session pooling",
        "the session_id of checkpnt",
        "issues a 409",
        "where the next session should start",
    ):
        assert not WORK_WORDING.search(phrase), phrase


@pytest.mark.skipif(
    shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs a git checkout"
)
def test_no_page_quotes_a_commit_hash() -> None:
    quoted = []
    for page in published_pages():
        for token in set(HEX_TOKEN.findall(page.read_text(encoding="utf-8"))):
            found = subprocess.run(  # nosec B603 B607 # git with a fixed argv
                ["git", "rev-parse", "--verify", "--quiet", f"{token}^{{commit}}"],
                cwd=REPO,
                capture_output=True,
                check=False,
            )
            if found.returncode == 0:
                quoted.append(f"{page.relative_to(REPO)}: {token}")
    assert quoted == []
