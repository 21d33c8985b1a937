"""The extractive provider on a realistic 50-message session, and its update with a second run's evidence."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from checkpoints.llm.extractive import MODEL_NAME, ExtractiveProvider
from checkpoints.medallion_schema import (
    Evidence,
    Medallion,
    MedallionContent,
    MedallionMeta,
    MedallionScope,
)
from tests.llm import transcripts as t

SCOPE = MedallionScope.from_dict(t.SCOPE)


def generated() -> MedallionContent:
    return ExtractiveProvider().generate(SCOPE, Evidence.from_dict(t.EVIDENCE))


def as_medallion(content: MedallionContent) -> Medallion:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Medallion.build(MedallionMeta("m-1", MODEL_NAME, now, now), SCOPE, content)


def containing(phrase: str, texts: list[str]) -> list[str]:
    return [text for text in texts if phrase.lower() in text.lower()]


def test_the_fixture_is_a_50_message_session() -> None:
    assert len(t.TRANSCRIPT) == 50


def test_it_summarises_the_session_within_300_characters_from_its_most_informative_sentences() -> None:
    high_level = generated().summary.high_level
    assert 50 < len(high_level) <= 300
    # The session summary's lead sentence carries the most central terms: it leads the summary.
    assert high_level.startswith("Refactored the billing service's invoice generation")
    assert "?" not in high_level


def test_it_finds_every_stated_decision_once_with_rationale_and_confidence() -> None:
    decisions = generated().decisions
    statements = [d.statement for d in decisions]
    for phrase in t.STATED_DECISIONS:
        assert len(containing(phrase, statements)) == 1, (phrase, statements)
    by_phrase = {phrase: containing(phrase, statements)[0] for phrase in t.STATED_DECISIONS}
    tax = next(d for d in decisions if d.statement == by_phrase["tax calculation into its own module"])
    assert tax.rationale == "Because it is duplicated in three places."
    decimal = next(d for d in decisions if d.statement == by_phrase["Decimal everywhere"])
    assert decimal.rationale.startswith("Since floats caused the penny drift bug")
    numbering = next(d for d in decisions if "sequential per tenant" in d.statement)
    assert numbering.confidence == 0.9  # "Decision:" is stated as final
    assert all(0 <= d.confidence <= 1 and d.id.startswith("D-") for d in decisions)
    # Questions, requests and observations are not decisions.
    for not_a_decision in ("thread-safe", "update the runbook", "Who owns", "load test"):
        assert not containing(not_a_decision, statements), not_a_decision


def test_it_keeps_open_only_the_questions_nothing_later_answers() -> None:
    questions = [q.question for q in generated().open_questions]
    for phrase in t.OPEN_QUESTIONS:
        assert len(containing(phrase, questions)) == 1, (phrase, questions)
    for phrase in t.ANSWERED_QUESTIONS:
        assert not containing(phrase, questions), (phrase, questions)
    assert len(questions) == len(t.OPEN_QUESTIONS)


def test_it_prioritises_questions_and_records_what_they_wait_for() -> None:
    questions = {q.question: q for q in generated().open_questions}
    rollout = questions["What is the rollout plan for the new builder in production?"]
    assert rollout.priority == "high"  # production
    rounding = next(q for text, q in questions.items() if "rounding mode" in text)
    assert rounding.blocked_on == ["the finance team review"]


def test_it_derives_affordances_and_subsystems() -> None:
    result = generated()
    entry_points = result.affordances.recommended_entry_points
    assert entry_points[:2] == ["billing/invoice_builder.py", "billing/line_items.py"]
    for expected in (
        "make profile-billing",
        "pytest tests/billing -q",
        "https://grafana.example.com/d/billing-month-end",
    ):
        assert expected in entry_points
    assert containing("full invoice backfill", result.affordances.avoid_repeating)
    assert containing("caching tax rates in Redis", result.affordances.avoid_repeating)
    assert result.affordances.invariants == ["Money must never be stored as a float."]
    subsystems = {s.name: s for s in result.summary.subsystems}
    assert set(SCOPE.graph_nodes) <= set(subsystems)
    assert subsystems["module:tax"].status == "in_progress"  # "tax module in progress"
    assert "billing" in subsystems  # the artefacts' top-level directory
    assert "tests" not in subsystems and "docs" not in subsystems


def test_it_is_deterministic_and_valid() -> None:
    first, second = generated(), generated()
    assert first == second
    assert MedallionContent.from_dict(first.to_dict(), require_all=True) == first


def test_an_update_adds_new_decisions_keeps_old_ones_and_closes_answered_questions() -> None:
    before = generated()
    after = ExtractiveProvider().update(as_medallion(before), Evidence.from_dict(t.SECOND_SESSION))
    statements = [d.statement for d in after.decisions]
    # Nothing lost, nothing duplicated (the restated numbering decision keeps its first id).
    assert [d.id for d in after.decisions[: len(before.decisions)]] == [d.id for d in before.decisions]
    for phrase in [*t.STATED_DECISIONS, *t.NEW_DECISIONS]:
        assert len(containing(phrase, statements)) == 1, (phrase, statements)
    assert len({d.id for d in after.decisions}) == len(after.decisions)

    questions = [q.question for q in after.open_questions]
    for phrase in t.ANSWERED_IN_SECOND_SESSION:
        assert not containing(phrase, questions), (phrase, questions)
    for phrase in t.STILL_OPEN_AFTER_SECOND_SESSION:
        assert len(containing(phrase, questions)) == 1, (phrase, questions)
    # The question that stayed open keeps its id.
    kept = next(q for q in after.open_questions if "index on line_items" in q.question)
    assert kept.id == next(q.id for q in before.open_questions if "index on line_items" in q.question)

    # The summary moves with the new evidence.
    assert after.summary.high_level != before.summary.high_level
    assert "Finance answered the rounding question" in after.summary.high_level
    assert len(after.summary.high_level) <= 300
    subsystems = {s.name: s for s in after.summary.subsystems}
    assert subsystems["module:tax"].status == "stable"  # "finished"
    assert "make migrate-billing" in after.affordances.recommended_entry_points
    assert "billing/tax.py" in after.affordances.recommended_entry_points  # old ones stay
    assert after.affordances.invariants == [
        "Money must never be stored as a float.",
        "Never bypass the tax module when computing totals.",
    ]


def test_an_update_with_nothing_new_changes_no_decision_or_question() -> None:
    before = generated()
    evidence = Evidence(session_summary="Reviewed the dashboards; nothing changed.")
    after = ExtractiveProvider().update(as_medallion(before), evidence)
    assert after.decisions == before.decisions
    assert after.open_questions == before.open_questions


@pytest.mark.parametrize(
    "sentence",
    [
        "Should we decide whether to use Redis?",
        "If we decide to use Redis, we will need a cluster.",
        "We haven't decided on the queue yet.",
        "Can you run the tests?",
    ],
)
def test_it_does_not_take_hypotheticals_or_requests_for_decisions(sentence: str) -> None:
    result = ExtractiveProvider().generate(
        SCOPE, Evidence(session_summary="Planning.", transcripts=[f"a: {sentence}"])
    )
    assert result.decisions == []


def test_it_always_writes_a_valid_summary_even_from_a_single_word() -> None:
    result = ExtractiveProvider().generate(SCOPE, Evidence(session_summary="Nothing."))
    assert result.summary.high_level == "Nothing."
    long = "word " * 200
    result = ExtractiveProvider().generate(
        SCOPE, Evidence(session_summary=long + "end of a very long sentence.")
    )
    assert len(result.summary.high_level) <= 300 and result.summary.high_level.endswith("…")
