"""Text plumbing for the extractive summariser: sentences with their speaker and position, content terms,
TF-IDF salience, and the greedy selection of a summary that fits a character budget."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from checkpoints.medallion_schema import Evidence

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he her here hers herself him
    himself his how i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most
    mustn't my myself no nor not now of off ok okay on once only or other ought our ours ourselves out over
    own same shan't she should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under until up us very
    was wasn't we we'd we'll we're we've were weren't what what's when where which while who whom why will
    with won't would wouldn't yes yet you you'd you'll you're you've your yours yourself yourselves
    think thanks thank sure right well yeah yep hi hello also still just really actually maybe need needs
    figure whether find know ask wonder question let get got go going"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# "alice:", "assistant (planner):", "[tool] grep:" at the start of a transcript entry.
_SPEAKER = re.compile(r"^\s*\[?([A-Za-z][\w .@-]{0,39}?)\]?\s*(?:\(([^)]{1,40})\))?\s*:\s+(?=\S)")
# Labels that look like speakers but announce the kind of statement that follows.
CUE_LABELS = frozenset(
    {
        "decision",
        "decided",
        "question",
        "open question",
        "todo",
        "note",
        "answer",
        "update",
        "summary",
        "plan",
    }
)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`]?[A-Z0-9`])")
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_'./-]*[a-z0-9]|[a-z0-9]")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)


@dataclass
class Sentence:
    """One sentence of the evidence. `segment` 0 is the session summary, 1.. the transcripts in order."""

    text: str
    segment: int
    position: int
    speaker: str = ""
    label: str = ""
    terms: list[str] = field(default_factory=list)

    @property
    def from_summary(self) -> bool:
        return self.segment == 0

    @property
    def is_question(self) -> bool:
        return self.text.rstrip("\"')] ").endswith("?")

    @cached_property
    def term_set(self) -> frozenset[str]:
        return frozenset(self.terms)


def stem(word: str) -> str:
    """A deliberately light stemmer: enough to equate "failures"/"failure", "logged"/"log" and
    "retried"/"retry", and always the same output for the same word."""
    word = word.removesuffix("'s")
    if len(word) > 4 and word.endswith(("ies", "ied")):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


def content_terms(text: str) -> list[str]:
    """Lower-cased, stemmed words that carry meaning (stopwords and one-letter tokens dropped)."""
    return [stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS and len(t) > 1]


def split_speaker(entry: str) -> tuple[str, str, str]:
    """(speaker, label, rest) of a transcript entry; a cue label ("Decision:") is not a speaker."""
    match = _SPEAKER.match(entry)
    if not match:
        return "", "", entry
    name = match.group(1).strip()
    rest = entry[match.end() :]
    if name.lower() in CUE_LABELS:
        return "", name.lower(), rest
    return (f"{name} ({match.group(2)})" if match.group(2) else name), "", rest


def split_sentences(text: str) -> list[str]:
    """Sentences of a text: code blocks dropped, lines and sentence ends (., !, ? + capital) split."""
    text = _FENCE.sub(" ", text)
    sentences: list[str] = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line).strip()
        if line:
            sentences.extend(part.strip() for part in _SENTENCE_BREAK.split(line) if part.strip())
    return sentences


def evidence_sentences(evidence: Evidence) -> list[Sentence]:
    """Every sentence of the evidence in order: the session summary first, then each transcript entry."""
    result: list[Sentence] = []
    segments = [evidence.session_summary, *evidence.transcripts]
    for segment, entry in enumerate(segments):
        speaker, label, body = split_speaker(entry) if segment else ("", "", entry)
        for i, text in enumerate(split_sentences(body)):
            terms = content_terms(text)
            # A cue label applies to the first sentence it introduces.
            result.append(Sentence(text, segment, len(result), speaker, label if i == 0 else "", terms))
    return result


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    left, right = set(a), set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def salience(sentences: Sequence[Sentence]) -> list[float]:
    """TF-IDF centrality of each sentence: the sum of its distinct terms' document frequency times their
    inverse sentence frequency, over the square root of its length. Sentences that carry the terms the whole
    evidence keeps returning to (but that are not everywhere) score highest."""
    if not sentences:
        return []
    count = len(sentences)
    document_frequency = Counter(term for s in sentences for term in set(s.terms))
    term_frequency = Counter(term for s in sentences for term in s.terms)
    weight = {
        term: term_frequency[term] * (math.log((count + 1) / (df + 1)) + 1.0)
        for term, df in document_frequency.items()
    }
    scores = []
    for sentence in sentences:
        distinct = set(sentence.terms)
        if not distinct:
            scores.append(0.0)
            continue
        scores.append(sum(weight[t] for t in distinct) / math.sqrt(len(sentence.terms)))
    return scores


def clean_statement(text: str, max_chars: int = 500) -> str:
    """A sentence as a standalone statement: filler openers removed, capitalised, bounded in length."""
    text = re.sub(
        r"^(?:so|ok|okay|alright|right|great|good|yes|yep|then|and|well|also|finally|agreed)\b[,:]?\s+",
        "",
        text,
        flags=re.I,
    )
    text = re.sub(
        r"^(?:decision|decided|note|update|plan|summary|answer|task|latest)\s*[:\-]\s*", "", text, flags=re.I
    )
    text = re.sub(r"\s+", " ", text).strip().strip("`")
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return truncate(text, max_chars)


def truncate(text: str, max_chars: int) -> str:
    """Cut at a word boundary and mark the cut with an ellipsis."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1].rsplit(" ", 1)[0].rstrip(",;:- ")
    return f"{cut}…"


def compose_summary(
    ranked: Sequence[tuple[float, Sentence]], max_chars: int, *, max_sentences: int = 4
) -> str:
    """Pick the best sentences that fit in `max_chars` (skipping near-duplicates of ones already taken)
    and join them in their original order. If even the best one is too long, it is truncated."""
    chosen: list[Sentence] = []
    used = 0
    for _, sentence in ranked:
        if len(chosen) == max_sentences:
            break
        if any(jaccard(sentence.terms, c.terms) > 0.5 for c in chosen):
            continue
        text = clean_statement(sentence.text, max_chars)
        extra = len(text) + (1 if chosen else 0)
        if used + extra <= max_chars and not text.endswith("…"):
            chosen.append(sentence)
            used += extra
    if not chosen:
        return truncate(clean_statement(ranked[0][1].text, 10_000), max_chars) if ranked else ""
    chosen.sort(key=lambda s: s.position)
    return " ".join(clean_statement(s.text, max_chars) for s in chosen)
