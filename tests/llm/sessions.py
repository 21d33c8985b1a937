"""Long generated sessions for the summariser's scaling tests and benchmarks: thousands of transcript entries
with decisions, questions, answers and chatter about many components, so that most decisions and questions
are distinct (the expensive case for anything that compares them pairwise)."""

from __future__ import annotations

import random

from checkpoints.medallion_schema import Evidence

SPEAKERS = ["maya", "planner", "coder", "reviewer", "tester", "assistant (ops)", ""]
NOUNS = [
    f"{word}{i}"
    for word in ("cache", "queue", "ledger", "parser", "router", "index", "worker", "schema", "invoice")
    for i in range(150)
]
VERBS = ["use", "keep", "move", "switch", "replace", "drop", "split", "merge", "migrate", "rename", "pin"]
TEMPLATES = [
    "We decided to {v} the {a} before the {b} release, because the {c} kept failing.",
    "We will {v} {a} into {b} next sprint.",
    "Decision: {v} the {a} now. That way the {b} stays small.",
    "Going with {a} instead of {b} for the {c}, since it is simpler.",
    "Should we {v} the {a} or keep the {b} as it is?",
    "Do we need the {a} for the {b} rollout?",
    "open question: who owns the {a} and {b}?",
    "Yes, the {a} works with the {b} now.",
    "Confirmed: the {a} handles {b} without the {c}.",
    "answer: the {a} is fine for {b}.",
    "I ran the {a} benchmark and the {b} took {n} seconds.",
    "The {a} in src/{b}/{c}.py still calls the {d} twice.",
    "Don't rerun the {a} backfill; we already verified the {b} output.",
    "The {a} must always stay behind the {b}.",
    "Looks good to me, the {a} and {b} tests are green.",
]


def transcripts(count: int, seed: int = 7, *, sentences_each: tuple[int, ...] = (1, 1, 2)) -> list[str]:
    """`count` transcript entries of a long session, each of a number of sentences drawn from
    `sentences_each`."""
    rng = random.Random(seed)
    entries = []
    for _ in range(count):
        sentences = []
        for _ in range(rng.choice(sentences_each)):
            names = {key: rng.choice(NOUNS) for key in "abcd"}
            sentences.append(
                rng.choice(TEMPLATES).format(v=rng.choice(VERBS), n=rng.randint(2, 900), **names)
            )
        speaker = rng.choice(SPEAKERS)
        entries.append(f"{speaker}: {' '.join(sentences)}" if speaker else " ".join(sentences))
    return entries


def evidence(count: int, seed: int = 7, *, sentences_each: tuple[int, ...] = (1, 1, 2)) -> Evidence:
    return Evidence(
        session_summary="Refactoring the ledger and the queues; several questions are still open.",
        transcripts=transcripts(count, seed, sentences_each=sentences_each),
    )
