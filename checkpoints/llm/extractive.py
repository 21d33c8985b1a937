"""The default provider: an offline, deterministic extractive summariser.

It writes nothing the evidence does not say. The summary is the most informative sentences (TF-IDF
centrality, with the session summary and early sentences favoured) that fit in 300 characters; decisions
are the sentences that state one; open questions are the questions nothing later answers; affordances come
from artefacts (paths, commands, URLs) and from "don't redo" / "must always" statements; subsystems from
the scope's graph nodes and the artefacts' directories.

`update` merges: decisions accumulate (restatements keep their first id), existing open questions that the
new evidence answers are closed, new unanswered ones are added, and the summary is rebuilt from the new
evidence with the previous summary as lower-weighted background.
"""

from __future__ import annotations

from collections.abc import Sequence

from checkpoints.llm import findings, questions
from checkpoints.llm.text import (
    Sentence,
    compose_summary,
    content_terms,
    evidence_sentences,
    salience,
    split_sentences,
)
from checkpoints.medallion_schema import (
    HIGH_LEVEL_MAX_CHARS,
    Affordances,
    Evidence,
    Medallion,
    MedallionContent,
    MedallionScope,
    Subsystem,
    Summary,
)

MODEL_NAME = "cairn-extractive-1"
MAX_DECISIONS = 500
MAX_QUESTIONS = 200
MAX_AFFORDANCES = 30


class ExtractiveProvider:
    """Offline and deterministic: the same evidence always yields the same medallion."""

    @property
    def model(self) -> str:
        return MODEL_NAME

    def generate(self, scope: MedallionScope, evidence: Evidence) -> MedallionContent:
        sentences = evidence_sentences(evidence)
        return MedallionContent(
            summary=Summary(
                high_level=self._high_level(sentences),
                subsystems=self._subsystems(scope, evidence, sentences, {}),
            ),
            decisions=findings.decisions_in(sentences)[:MAX_DECISIONS],
            open_questions=[q for q, _ in questions.open_questions_in(sentences)][:MAX_QUESTIONS],
            affordances=self._affordances(evidence, sentences, Affordances()),
        )

    def update(self, existing: Medallion, evidence: Evidence) -> MedallionContent:
        sentences = evidence_sentences(evidence)
        new_decisions = findings.decisions_in(sentences)
        decisions = findings.merge_decisions(existing.decisions, new_decisions)
        still_open = questions.merge_questions(existing.open_questions, sentences)
        previous = {s.name: s for s in existing.summary.subsystems}
        return MedallionContent(
            summary=Summary(
                high_level=self._high_level(sentences, background=existing.summary.high_level),
                subsystems=self._subsystems(existing.scope, evidence, sentences, previous),
            ),
            decisions=decisions[-MAX_DECISIONS:],
            open_questions=still_open[-MAX_QUESTIONS:],
            affordances=self._affordances(evidence, sentences, existing.affordances),
        )

    @staticmethod
    def _high_level(sentences: Sequence[Sentence], background: str = "") -> str:
        # Fragments ("Great result.") are not summaries; questions are not what was learned.
        candidates = [s for s in sentences if not s.is_question and len(s.terms) >= 3] or [
            s for s in sentences if s.segment == 0
        ]
        offset = len(sentences)
        # The previous summary competes too, but below the new evidence: the summary must move with it.
        old = [
            Sentence(text, -1, offset + i, terms=content_terms(text))
            for i, text in enumerate(split_sentences(background))
        ]
        scores = salience([*candidates, *old])
        ranked: list[tuple[float, Sentence]] = []
        for score, sentence in zip(scores, [*candidates, *old], strict=True):
            if sentence.segment == 0:
                score *= 1.6 if sentence.position == 0 else 1.25
            elif sentence.segment == -1:
                score *= 0.6
            ranked.append((score, sentence))
        ranked.sort(key=lambda pair: (-pair[0], pair[1].position))
        high_level = compose_summary(ranked, HIGH_LEVEL_MAX_CHARS)
        return (
            high_level
            or (background or "No summary could be extracted from the evidence.")[:HIGH_LEVEL_MAX_CHARS]
        )

    @staticmethod
    def _subsystems(
        scope: MedallionScope,
        evidence: Evidence,
        sentences: Sequence[Sentence],
        previous: dict[str, Subsystem],
    ) -> list[Subsystem]:
        names = list(previous)
        for name in findings.subsystem_names(scope.graph_nodes, evidence.artefacts):
            if name not in previous:
                names.append(name)
        return [findings.subsystem_status(name, sentences, previous.get(name)) for name in names[:50]]

    @staticmethod
    def _affordances(evidence: Evidence, sentences: Sequence[Sentence], previous: Affordances) -> Affordances:
        def union(old: Sequence[str], new: Sequence[str]) -> list[str]:
            # Newest last; when full, the oldest entries make room.
            return list(dict.fromkeys([*old, *new]))[-MAX_AFFORDANCES:]

        invariants = union(previous.invariants or [], findings.invariants(sentences))
        return Affordances(
            recommended_entry_points=union(
                previous.recommended_entry_points, findings.entry_points(evidence.artefacts, sentences)
            ),
            avoid_repeating=union(previous.avoid_repeating, findings.avoid_repeating(sentences)),
            invariants=invariants or None,
        )
