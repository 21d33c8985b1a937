"""What the extractive summariser finds in evidence: decisions, affordances from artefacts and text, and
subsystem status (open questions are in `questions`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from checkpoints.llm.similar import SimilarSets, rarest_first
from checkpoints.llm.text import Sentence, clean_statement, jaccard, truncate
from checkpoints.medallion_schema import Decision, Subsystem, stable_id
from checkpoints.medallion_schema.checks import NAME_MAX_CHARS

_I = re.IGNORECASE
_WE = r"(?:we|i|the team|team|everyone)"
_DECISION_STRONG = re.compile(
    rf"\b{_WE}\s+(?:have\s+|'ve\s+|all\s+)?(?:decided|agreed|settled on|committed to|are committing to)\b"
    r"|\bdecision\s*(?:is|was)?\s*[:\-]|\b(?:it'?s|that'?s) (?:decided|settled|final)\b|\bfinal call\b",
    _I,
)
_DECISION_MEDIUM = re.compile(
    rf"\b{_WE}\s+(?:chose|picked|opted|selected)\b|\b(?:going|go) with\b|\blet'?s (?:go with|use|keep|do)\b"
    rf"|\b{_WE}(?:'ll| will| are going to|'re going to|'re| are) (?:use|adopt|keep|move|switch|replace|drop"
    r"|ship|split|merge|migrate|deprecate|remove|add|store|standardi[sz]e|stick|wrap|rename|cache|expose"
    r"|extract|retire|require|enforce|run|put|make|do|build|implement|introduce|pin|defer|postpone|skip"
    r"|switching|moving|standardi[sz]ing|migrating|dropping|keeping|using|replacing|splitting|adopting)\b"
    r"|\bthe plan is to\b|\bfrom now on\b",
    _I,
)
_NOT_A_DECISION = re.compile(
    r"\b(?:if|whether|unless|should we|could we|would we|do we|not (?:yet )?decided|undecided"
    r"|haven'?t decided|still deciding|need to decide|to decide"
    r"|decide (?:whether|if|on)|might|maybe we|once we decide)\b",
    _I,
)
_HEDGE = re.compile(
    r"\b(?:probably|for now|tentative(?:ly)?|likely|i think|we think|for the moment|temporar)", _I
)
_RATIONALE_INLINE = re.compile(
    r"\s*(?:,\s*)?\b(because|since|so that|to avoid|given that|due to|as it)\b\s*", _I
)
_RATIONALE_NEXT = re.compile(
    r"^(?:because|since|that way|this (?:avoids|keeps|means|lets|gives|removes|makes|fixes)"
    r"|it (?:avoids|keeps|means|lets|gives|removes|makes)|the reason|otherwise|reason:)",
    _I,
)
_AVOID = re.compile(
    r"\b(?:don'?t|do not|never|avoid|no need to|stop)\s+(?:re-?|again\s+)?(?:run|do|repeat|try|implement|scan"
    r"|index|build|compute|generate|fetch|download|benchmark|test|investigat|debug|chas)"
    r"|\balready (?:tried|done|ran|checked|verified|migrated|fixed|benchmarked|investigated)\b"
    r"|\b(?:didn'?t|did not|doesn'?t|does not) work\b|\bdead end\b|\bwaste of time\b|\bruled out\b",
    _I,
)
_INVARIANT = re.compile(
    r"\b(?:must (?:always|never|not|stay|remain|be)|always (?:be|keep|use|run|go|stay)|never (?:be|use|commit"
    r"|log|store|expose|call|write|bypass|skip)|invariant|guarantee)\b",
    _I,
)
_STATUS_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "deprecated",
        re.compile(r"\b(?:deprecat\w*|removed?|delet\w*|legacy|sunset\w*|dropp?(?:ed|ing)?|retir\w*)\b", _I),
    ),
    (
        "stable",
        re.compile(
            r"\b(?:done|finished|complete[d]?|merged|shipped|stable|passing|green|released|landed)\b", _I
        ),
    ),
    (
        "in_progress",
        re.compile(
            r"\b(?:refactor\w*|working on|in progress|wip|started|migrat\w*|rewrit\w*|splitting|moving"
            r"|extract\w*|half|partially|next up|ongoing|underway)\b",
            _I,
        ),
    ),
)
_PATH = re.compile(
    r"^(?:\.{0,2}/)?[\w.@-]+(?:/[\w.@-]+)+/?$|^[\w.-]+\.(?:py|pyi|ts|tsx|js|jsx|go|rs|md|rst|ya?ml|json|toml"
    r"|sql|sh|txt|cfg|ini|html|css|java|kt|rb|php|c|h|cc|cpp|proto|tf|lock)$"
)
_URL = re.compile(r"^https?://[^\s<>\"']+$")
_URL_IN_TEXT = re.compile(r"https?://[^\s<>\"'`)\]]+")
_COMMAND = re.compile(
    r"^(?:make|pytest|python3?|pip|uv|poetry|npm|npx|yarn|pnpm|git|docker|docker-compose|kubectl|helm|cargo"
    r"|go|bash|sh|curl|ruff|mypy|manage\.py|\./[\w./-]+|celery|gunicorn|alembic|terraform)(?:\s|$)"
)
_BACKTICKED = re.compile(r"`([^`\n]{2,200})`")
_ENTRY_KEYS = re.compile(r"entry|command|cmd|path|file|url|link|script|endpoint|doc", _I)


def _confidence(sentence: Sentence) -> float | None:
    """How firmly the sentence states a decision; None if it states none (a question, a hypothetical)."""
    text = sentence.text
    if sentence.is_question or len(sentence.terms) < 2:
        return None
    strong = sentence.label in ("decision", "decided") or bool(_DECISION_STRONG.search(text))
    if not strong and not _DECISION_MEDIUM.search(text):
        return None
    if _NOT_A_DECISION.search(text) and not sentence.label:
        return None
    if _HEDGE.search(text):
        return 0.5
    return 0.9 if strong else 0.75


def is_decision(sentence: Sentence) -> bool:
    return _confidence(sentence) is not None


def decision_from(sentence: Sentence, following: Sentence | None) -> Decision | None:
    """A decision if the sentence states one (not a question, not hypothetical), with its rationale."""
    confidence = _confidence(sentence)
    if confidence is None:
        return None
    text = sentence.text
    statement, rationale = text, ""
    parts = _RATIONALE_INLINE.split(text, maxsplit=1)
    if len(parts) == 3 and len(parts[0].split()) >= 3:
        statement = parts[0].rstrip(" ,;:-") + "."
        rationale = f"{parts[1].capitalize()} {parts[2]}".strip()
    elif (
        following is not None
        and following.segment == sentence.segment
        and _RATIONALE_NEXT.match(following.text)
    ):
        rationale = following.text
    if not rationale:
        rationale = f"Stated by {sentence.speaker}." if sentence.speaker else "Stated in the session summary."
    statement = clean_statement(statement)
    return Decision(
        id=stable_id("D", statement),
        statement=statement,
        rationale=clean_statement(rationale, 1000),
        confidence=confidence,
    )


def decisions_in(sentences: Sequence[Sentence]) -> list[Decision]:
    """Every decision the sentences state, restatements merged (`merge_decisions`)."""
    found = (
        decision_from(sentence, sentences[i + 1] if i + 1 < len(sentences) else None)
        for i, sentence in enumerate(sentences)
    )
    return merge_decisions([], [decision for decision in found if decision is not None])


# A restatement of a decision: Jaccard similarity of the statements' words at least this.
RESTATED = 0.75


def _words(statement: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", statement.lower()))


def merge_decisions(existing: list[Decision], new: Iterable[Decision]) -> list[Decision]:
    """Accumulate decisions: a restatement (same id, or nearly the same words) of the first decision it
    restates keeps that one's id and the higher confidence; anything else is appended. Restatements are
    looked up by id and through `SimilarSets`, never by comparing with every decision kept so far."""
    merged = list(existing)
    incoming = [(decision, _words(decision.statement)) for decision in new]
    kept_words = [_words(decision.statement) for decision in merged]
    restatements = SimilarSets(
        rarest_first([*kept_words, *(w for _, w in incoming)]), RESTATED, inclusive=True
    )
    first_with_id: dict[str, int] = {}
    for i, (decision, words) in enumerate(zip(merged, kept_words, strict=True)):
        restatements.add(words)
        first_with_id.setdefault(decision.id, i)
    for decision, words in incoming:
        restated = restatements.similar(words)
        if decision.id in first_with_id:
            restated.append(first_with_id[decision.id])
        if restated:
            i = min(restated)
            old = merged[i]
            if decision.confidence > old.confidence:
                merged[i] = Decision(old.id, old.statement, old.rationale, decision.confidence)
        else:
            first_with_id.setdefault(decision.id, len(merged))
            restatements.add(words)
            merged.append(decision)
    return merged


def _strings(value: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(key, string) for every string in nested artefacts; the key is the nearest enclosing object key."""
    if depth > 16:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            for inner_key, text in _strings(item, depth + 1):
                yield inner_key or str(key), text
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)
    elif isinstance(value, str):
        yield "", value


def is_reference(text: str) -> bool:
    """A path, URL or shell command: something a next session can open or run."""
    text = text.strip()
    if not text or len(text) > 300 or "\n" in text:
        return False
    if _URL.match(text) or _COMMAND.match(text):
        return True
    return " " not in text and bool(_PATH.match(text))


def entry_points(artefacts: dict[str, Any], sentences: Sequence[Sentence], limit: int = 20) -> list[str]:
    """Paths, commands and URLs: from the artefacts first (keys like `entry_points`/`commands` count whatever
    their values look like), then those quoted in backticks or linked in the text, most mentioned first."""
    found: list[str] = []
    for key, text in _strings(artefacts):
        text = text.strip()
        if is_reference(text) or (_ENTRY_KEYS.search(key) and 0 < len(text) <= 200 and "\n" not in text):
            found.append(text)
    mentioned: dict[str, int] = {}
    for sentence in sentences:
        for candidate in [*_BACKTICKED.findall(sentence.text), *_URL_IN_TEXT.findall(sentence.text)]:
            candidate = candidate.strip().rstrip(".,")
            if is_reference(candidate):
                mentioned[candidate] = mentioned.get(candidate, 0) + 1
    found.extend(sorted(mentioned, key=lambda c: -mentioned[c]))
    return list(dict.fromkeys(found))[:limit]


ITEM_CHARS = 400


def statements_matching(
    pattern: re.Pattern[str], sentences: Sequence[Sentence], limit: int = 20
) -> list[str]:
    results: list[str] = []
    for sentence in sentences:
        if len(results) == limit:
            break  # later statements could only be appended after the ones returned
        if not sentence.is_question and pattern.search(sentence.text):
            statement = clean_statement(sentence.text, ITEM_CHARS)
            if not any(jaccard(statement.lower().split(), r.lower().split()) > 0.7 for r in results):
                results.append(statement)
    return results


def avoid_repeating(sentences: Sequence[Sentence]) -> list[str]:
    return statements_matching(_AVOID, sentences)


def invariants(sentences: Sequence[Sentence]) -> list[str]:
    return statements_matching(_INVARIANT, sentences)


def _subsystem_key(name: str) -> str:
    return re.split(r"[:/]", name.strip().rstrip("/"))[-1].lower()


# Directories that hold code but are not subsystems of it.
_NOT_SUBSYSTEMS = frozenset(
    {
        "",
        "src",
        "lib",
        "app",
        "pkg",
        "internal",
        "tests",
        "test",
        "docs",
        "doc",
        "scripts",
        "examples",
        ".github",
    }
)


def subsystem_names(graph_nodes: Sequence[str], artefacts: dict[str, Any], limit: int = 12) -> list[str]:
    """Subsystems: the scope's graph nodes, then the top-level directories of artefact paths."""
    names = list(graph_nodes)
    keys = {_subsystem_key(n) for n in names}
    for _, text in _strings(artefacts):
        text = text.strip()
        if " " in text or "/" not in text or _URL.match(text):
            continue
        parts = [p for p in text.strip("./").split("/")[:-1] if p.lower() not in _NOT_SUBSYSTEMS]
        if parts and parts[0].lower() not in keys:
            keys.add(parts[0].lower())
            names.append(parts[0])
    return names[:limit]


def subsystem_status(
    name: str, sentences: Sequence[Sentence], previous: Subsystem | None = None
) -> Subsystem:
    """Status from the latest clause that names the subsystem next to a status cue; notes from the latest
    sentence that names it. A path inside it (`billing/x.py`) is about that file, not the subsystem.
    Without a mention the previous entry (if any) stands."""
    key = _subsystem_key(name)
    pattern = re.compile(rf"(?<![\w/.-]){re.escape(key)}(?![\w/-]|\.\w)", _I)
    status, notes = (previous.status, previous.notes) if previous else ("unknown", "")
    for sentence in sentences:
        if not pattern.search(sentence.text):
            continue
        notes = truncate(clean_statement(sentence.text, 2000), 300)
        for clause in re.split(r"[,;:]", sentence.text):
            if pattern.search(clause):
                status = next((s for s, cue in _STATUS_CUES if cue.search(clause)), status)
    return Subsystem(name=truncate(name, NAME_MAX_CHARS), status=status, notes=notes)
