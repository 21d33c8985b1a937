"""What the extractive summariser pulls out of evidence: decisions, open questions (and which of them a later
sentence answers), affordances from artefacts and text, and subsystem status."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from checkpoints.llm.text import Sentence, clean_statement, jaccard, truncate
from checkpoints.medallion_schema import Decision, OpenQuestion, Subsystem, stable_id
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
_QUESTION_STATEMENT = re.compile(
    r"\b(?:open question|unclear (?:whether|if|how|what|why)|not sure (?:whether|if|how|what)"
    r"|(?:still )?need to (?:figure out|decide|determine|find out)|tbd|to be decided|unknown whether)\b",
    _I,
)
_REQUEST = re.compile(
    r"^(?:can|could|would|will) you\b|^please\b|^any (?:thoughts|objections|questions)\b"
    r"|^(?:right|ok|okay)\?$|^(?:sounds good|makes sense|does that make sense|agreed)\?",
    _I,
)
_ANSWER_START = re.compile(
    r"^(?:yes|no|yep|nope|correct|right|confirmed|answer|it does|it doesn'?t|we do|we don'?t|they do|it is"
    r"|it'?s not|not needed|turns out|good news|checked)\b",
    _I,
)
_ANSWER_CUE = re.compile(
    r"\b(?:confirmed|confirm|turns out|resolved|answer(?:ed)?|settled|decided|agreed|verified|measured"
    r"|checked|found that|it is|it'?s|they are|we can|we can'?t|will|going with|fine|safe|works)\b",
    _I,
)
_HIGH = re.compile(
    r"\b(?:block(?:s|ing|er)?|urgent|critical|asap|before (?:we )?(?:ship|release|launch|merge|deploy|cut)"
    r"|security|data loss|outage|production|prod|must)\b",
    _I,
)
_LOW = re.compile(
    r"\b(?:nice to have|eventually|someday|later|minor|cosmetic|low priority|at some point)\b", _I
)
_BLOCKED_ON = re.compile(
    r"\b(?:blocked (?:on|by)|depends on|dependent on|waiting (?:on|for)|pending"
    r"|until (?:we (?:get|hear|have|see|know)))\s+([^,.;?!()]{3,80})",
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


def decision_from(sentence: Sentence, following: Sentence | None) -> Decision | None:
    """A decision if the sentence states one (not a question, not hypothetical), with its rationale."""
    text = sentence.text
    if sentence.is_question or len(sentence.terms) < 2:
        return None
    strong = sentence.label in ("decision", "decided") or bool(_DECISION_STRONG.search(text))
    if not strong and not _DECISION_MEDIUM.search(text):
        return None
    if _NOT_A_DECISION.search(text) and not sentence.label:
        return None
    confidence = 0.9 if strong else 0.75
    if _HEDGE.search(text):
        confidence = 0.5
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


def question_from(sentence: Sentence, context: Sequence[Sentence] = ()) -> OpenQuestion | None:
    """An open question if the sentence asks or states one (requests and pleasantries are not questions).
    `context` (the replies right after it) can add priority cues and what it is blocked on."""
    text = sentence.text.strip()
    body = re.sub(r"^(?:open question|question)\s*[:\-]\s*", "", text, flags=_I)
    asked = sentence.is_question and not _REQUEST.search(body)
    stated = sentence.label in ("question", "open question", "todo") or bool(_QUESTION_STATEMENT.search(text))
    if not (asked or stated) or len(sentence.terms) < 2:
        return None
    related = " ".join(s.text for s in context if s.term_set & sentence.term_set)
    around = f"{text} {related}"
    priority = "high" if _HIGH.search(around) else "low" if _LOW.search(around) else "medium"
    blocked_on = list(dict.fromkeys(m.group(1).strip() for m in _BLOCKED_ON.finditer(around)))[:5]
    question = clean_statement(body)
    return OpenQuestion(
        id=stable_id("Q", question), question=question, priority=priority, blocked_on=blocked_on
    )


def answers(
    question_terms: frozenset[str], question_segment: int, later: Sentence, *, decision: bool
) -> bool:
    """Whether `later` answers a question: it restates most of the question's terms as an answer or a
    decision, or it is a direct reply ("Yes, ...", "Confirmed: ...") in the next two entries on its topic."""
    if later.is_question or not question_terms:
        return False
    shared = question_terms & later.term_set
    if (
        len(shared) >= 2
        and len(shared) / len(question_terms) >= 0.5
        and (decision or _ANSWER_CUE.search(later.text))
    ):
        return True
    direct = _ANSWER_START.search(later.text) or later.label == "answer"
    return bool(direct) and 0 < later.segment - question_segment <= 2 and len(shared) >= 1


def decisions_in(sentences: Sequence[Sentence]) -> list[Decision]:
    found: list[Decision] = []
    for i, sentence in enumerate(sentences):
        decision = decision_from(sentence, sentences[i + 1] if i + 1 < len(sentences) else None)
        if decision is not None:
            found = merge_decisions(found, [decision])
    return found


def open_questions_in(sentences: Sequence[Sentence]) -> list[tuple[OpenQuestion, Sentence]]:
    """Questions asked in the evidence that nothing later in it answers, with the sentence asking them."""
    asked: list[tuple[OpenQuestion, Sentence]] = []
    for i, sentence in enumerate(sentences):
        replies = [s for s in sentences[i + 1 : i + 6] if s.segment - sentence.segment <= 2]
        question = question_from(sentence, replies)
        if question is None or any(jaccard(sentence.terms, s.terms) > 0.7 for _, s in asked):
            continue
        later = sentences[i + 1 :]
        if not any(answers(sentence.term_set, sentence.segment, s, decision=is_decision(s)) for s in later):
            asked.append((question, sentence))
    return asked


def is_decision(sentence: Sentence) -> bool:
    return decision_from(sentence, None) is not None


def merge_decisions(existing: list[Decision], new: Iterable[Decision]) -> list[Decision]:
    """Accumulate decisions: a restatement (same id, or nearly the same words) keeps the first id and the
    higher confidence; anything else is appended."""
    merged = list(existing)
    for decision in new:
        words = set(re.findall(r"\w+", decision.statement.lower()))
        for i, old in enumerate(merged):
            if old.id == decision.id or jaccard(words, re.findall(r"\w+", old.statement.lower())) >= 0.75:
                if decision.confidence > old.confidence:
                    merged[i] = Decision(old.id, old.statement, old.rationale, decision.confidence)
                break
        else:
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
        if not sentence.is_question and pattern.search(sentence.text):
            statement = clean_statement(sentence.text, ITEM_CHARS)
            if not any(jaccard(statement.lower().split(), r.lower().split()) > 0.7 for r in results):
                results.append(statement)
    return results[:limit]


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
