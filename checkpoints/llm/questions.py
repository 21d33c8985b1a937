"""Open questions in the evidence for the extractive summariser: which sentences ask or state one, and which
of those a later sentence answers.

Every sentence is read once: whether it can answer (not a question; a decision or an answer cue) and whether
it is a direct reply ("Yes, ...") are decided when the `Answers` index is built, and a question only looks at
the sentences that share one of its rarest terms (see `Answers.answered`). Nothing compares a question with
every later sentence, so the cost grows with the evidence, not with its square.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence

from checkpoints.llm.findings import is_decision
from checkpoints.llm.similar import SimilarSets, rarest_first
from checkpoints.llm.text import Sentence, clean_statement, content_terms
from checkpoints.medallion_schema import OpenQuestion, stable_id

_I = re.IGNORECASE
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
# A restatement of a question already asked: Jaccard similarity of their terms above this.
RESTATED = 0.7
# A question asked in an earlier session (the medallion's own): only topical answers count for it, never a
# bare "yes" that happens to open the new evidence.
EARLIER_SESSION = -10


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


class Answers:
    """Which sentences of the evidence answer a question. A sentence answers one when it restates at least
    two of its terms and half of them as an answer or a decision, or when it is a direct reply ("Yes, ...",
    "Confirmed: ...") on its topic in one of the next two entries."""

    def __init__(self, sentences: Sequence[Sentence]) -> None:
        self._sentences = sentences
        # Positions (ascending) of the sentences able to answer by restating, under each of their terms.
        self._restating: defaultdict[str, list[int]] = defaultdict(list)
        self._replies: defaultdict[int, list[Sentence]] = defaultdict(list)
        for position, sentence in enumerate(sentences):
            if sentence.is_question:
                continue
            if is_decision(sentence) or _ANSWER_CUE.search(sentence.text):
                for term in sentence.term_set:
                    self._restating[term].append(position)
            if _ANSWER_START.search(sentence.text) or sentence.label == "answer":
                self._replies[sentence.segment].append(sentence)

    def answered(self, terms: frozenset[str], segment: int, after: int) -> bool:
        """Whether a sentence after position `after` answers a question with these terms, asked in
        `segment` (EARLIER_SESSION for one from a previous session)."""
        return self._restated(terms, after) or any(
            terms & reply.term_set for step in (1, 2) for reply in self._replies.get(segment + step, ())
        )

    def _restated(self, terms: frozenset[str], after: int) -> bool:
        needed = max(2, (len(terms) + 1) // 2)  # at least two shared terms, and half of the question's
        if needed > len(terms):
            return False
        # Any sentence sharing `needed` terms shares one of any len - needed + 1 of them: look only under
        # the terms with the fewest sentences.
        probes = sorted(terms, key=lambda t: (len(self._restating.get(t, ())), t))[: len(terms) - needed + 1]
        seen: set[int] = set()
        for term in probes:
            positions = self._restating.get(term, [])
            for position in positions[bisect_right(positions, after) :]:
                if position not in seen:
                    seen.add(position)
                    if len(terms & self._sentences[position].term_set) >= needed:
                        return True
        return False


def open_questions_in(
    sentences: Sequence[Sentence], answers: Answers | None = None
) -> list[tuple[OpenQuestion, Sentence]]:
    """Questions asked in the evidence that nothing later in it answers, with the sentence asking them
    (a restatement of one already found is skipped)."""
    answers = answers or Answers(sentences)
    asked: list[tuple[OpenQuestion, Sentence]] = []
    restatements = SimilarSets(rarest_first(s.terms for s in sentences), RESTATED, inclusive=False)
    for i, sentence in enumerate(sentences):
        replies = [s for s in sentences[i + 1 : i + 6] if s.segment - sentence.segment <= 2]
        question = question_from(sentence, replies)
        if question is None or restatements.similar(sentence.term_set):
            continue
        if not answers.answered(sentence.term_set, sentence.segment, i):
            asked.append((question, sentence))
            restatements.add(sentence.term_set)
    return asked


def merge_questions(existing: Sequence[OpenQuestion], sentences: Sequence[Sentence]) -> list[OpenQuestion]:
    """An update's open questions: the existing ones the new evidence does not answer, then the evidence's
    own unanswered ones that are neither open already nor a restatement of an existing one."""
    answers = Answers(sentences)
    existing_terms = [frozenset(content_terms(q.question)) for q in existing]
    still_open = [
        q
        for q, terms in zip(existing, existing_terms, strict=True)
        if not answers.answered(terms, EARLIER_SESSION, -1)
    ]
    open_ids = {q.id for q in still_open}
    known = SimilarSets(rarest_first(existing_terms), RESTATED, inclusive=False)
    for terms in existing_terms:
        known.add(terms)
    for question, asked in open_questions_in(sentences, answers):
        if question.id not in open_ids and not known.similar(asked.term_set):
            still_open.append(question)
    return still_open
