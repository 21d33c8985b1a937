"""The Markdown the project publishes (README.md, CHANGELOG.md, docs/**/*.md) read as the tests need it:
code blocks marked runnable, and relative links."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
CHANGELOG = REPO / "CHANGELOG.md"

# The line before a fenced block that the tests run against a live server (invisible once rendered).
RUNNABLE_MARKER = "<!-- runnable -->"
RUNNABLE_LANGUAGES = {"sh": "sh", "bash": "sh", "python": "python"}

FENCE = re.compile(r"^(\s*)```\s*([\w-]*)")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def published_pages() -> list[Path]:
    return [README, CHANGELOG, *sorted(DOCS.rglob("*.md"))]


@dataclass(frozen=True)
class CodeBlock:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str  # "sh" or "python"
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def runnable_blocks(page: Path) -> list[CodeBlock]:
    """The blocks of `page` marked runnable. A marker not followed by a fenced sh, bash or python block is an
    error, so a mistyped marker cannot silently leave an example untested."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    for index, line in enumerate(lines):
        if line.strip() != RUNNABLE_MARKER:
            continue
        opening = FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
        if opening is None or opening.group(2) not in RUNNABLE_LANGUAGES:
            raise ValueError(f"{page}:{index + 1}: {RUNNABLE_MARKER} must precede a ```sh or ```python block")
        indent = opening.group(1)
        body: list[str] = []
        for candidate in lines[index + 2 :]:
            if candidate.strip() == "```":
                break
            body.append(candidate.removeprefix(indent))
        else:
            raise ValueError(f"{page}:{index + 2}: the runnable block is never closed")
        blocks.append(
            CodeBlock(page, index + 2, RUNNABLE_LANGUAGES[opening.group(2)], "\n".join(body) + "\n")
        )
    return blocks


def relative_links(page: Path) -> list[str]:
    """The targets of the page's Markdown links and images that point inside the repository (outside code)."""
    targets = []
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#"):
                targets.append(target)
    return targets
