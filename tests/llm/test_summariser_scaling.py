"""The extractive summariser's cost grows with its evidence, not with the evidence squared: every sentence is
read a bounded number of times, and near-duplicate decisions and questions are found through indexes
(`checkpoints.llm.similar`), never by comparing every pair. Speed itself is measured by
benchmarks (docs/security.md); these tests count the work, and guard against a quadratic blow-up."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from checkpoints.llm import findings, text
from checkpoints.llm.extractive import MODEL_NAME, ExtractiveProvider
from checkpoints.llm.similar import SimilarSets, rarest_first
from checkpoints.llm.text import evidence_sentences, jaccard
from checkpoints.medallion_schema import Medallion, MedallionMeta, MedallionScope
from tests.llm.sessions import evidence

SCOPE = MedallionScope.from_dict({"graph_nodes": ["repo:billing", "module:ledger"], "tags": ["refactor"]})


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of `module.name` (the function keeps working)."""
    calls: list[int] = []
    original: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("operation", ["generate", "update"])
def test_its_regex_and_pairwise_work_grows_linearly_with_the_evidence(
    monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    # The expensive steps: deciding whether a sentence states a decision (a handful of regexes), and
    # comparing two sets of words. Pairwise code runs them for every (question, later sentence) and every
    # (decision, kept decision): 10x the evidence then means ~100x the calls.
    decisions = counting(monkeypatch, findings, "decision_from")
    comparisons = [counting(monkeypatch, findings, "jaccard"), counting(monkeypatch, text, "jaccard")]
    provider = ExtractiveProvider()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    existing = Medallion.build(
        MedallionMeta("m-1", MODEL_NAME, now, now), SCOPE, provider.generate(SCOPE, evidence(300, seed=1))
    )
    work: list[tuple[int, int, int]] = []
    for count in (300, 3000):
        session = evidence(count)
        decisions.clear()
        for calls in comparisons:
            calls.clear()
        if operation == "generate":
            provider.generate(SCOPE, session)
        else:
            provider.update(existing, session)
        sentences = len(evidence_sentences(session))
        work.append((sentences, len(decisions), sum(len(calls) for calls in comparisons)))
    for sentences, decided, compared in work:
        assert decided <= sentences
        assert compared <= 25 * sentences  # affordances (<= 20 kept each) and the summary (<= 4 chosen)


def test_it_summarises_20000_transcripts_without_a_quadratic_blow_up() -> None:
    session = evidence(20_000)
    started = time.perf_counter()
    content = ExtractiveProvider().generate(SCOPE, session)
    elapsed = time.perf_counter() - started
    assert len(content.decisions) == 500 and len(content.open_questions) == 200
    # Not a speed test: a guard with a 10x margin. docs/security.md gives the
    # benchmark, before (the pairwise version: minutes) and after (a few seconds).
    assert elapsed < 90


@pytest.mark.parametrize(("threshold", "inclusive"), [(0.75, True), (0.7, False), (0.5, True)])
def test_similar_sets_find_exactly_what_comparing_every_pair_finds(threshold: float, inclusive: bool) -> None:
    rng = random.Random(threshold)
    vocabulary = [f"w{i}" for i in range(12)]
    sets = [frozenset(rng.sample(vocabulary, rng.randint(0, 8))) for _ in range(400)]
    index = SimilarSets(rarest_first(sets[::2]), threshold, inclusive=inclusive)  # some words unranked
    for i, words in enumerate(sets):
        expected = [
            j
            for j, other in enumerate(sets[:i])
            if (jaccard(words, other) >= threshold if inclusive else jaccard(words, other) > threshold)
        ]
        assert index.similar(words) == expected
        assert index.add(words) == i
