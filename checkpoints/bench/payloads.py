"""Deterministic agent states of a chosen size: a conversation, a plan and some tool output, like the state
an agent checkpoints, made of words (so TOAST compresses them as it would real text, neither better nor
worse than random bytes)."""

from __future__ import annotations

import random
from typing import Any

from checkpoints.integrity import canonical_json

WORDS = (
    "agent",
    "plan",
    "tool",
    "call",
    "result",
    "search",
    "index",
    "thread",
    "checkpoint",
    "state",
    "review",
    "draft",
    "answer",
    "question",
    "user",
    "budget",
    "invoice",
    "refactor",
    "module",
    "test",
    "deploy",
    "rollback",
    "cache",
    "database",
    "query",
    "latency",
    "error",
    "retry",
    "summary",
    "decision",
    "context",
    "memory",
    "branch",
    "merge",
    "config",
    "schema",
    "token",
    "model",
    "prompt",
    "output",
    "input",
    "graph",
    "node",
    "edge",
    "customer",
    "order",
    "ticket",
    "priority",
    "status",
    "pending",
    "done",
    "failed",
    "running",
    "queued",
    "report",
    "chart",
    "metric",
    "alert",
)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def agent_state(target_bytes: int, *, seed: int = 7) -> dict[str, Any]:
    """A JSON state whose canonical encoding is `target_bytes` long, give or take a message."""
    rng = random.Random(seed)  # nosec B311 # seeded generator for reproducible benchmark data, not a secret
    state: dict[str, Any] = {
        "step": 12,
        "plan": [sentence(rng, 6) for _ in range(4)],
        "tool_results": {"search": {"hits": 3, "took_ms": 41.5, "ok": True}},
        "messages": [],
    }
    size = len(canonical_json(state).encode("utf-8"))
    turn = 0
    while size < target_bytes:
        message = {"role": ("user", "assistant", "tool")[turn % 3], "content": sentence(rng, 30), "n": turn}
        state["messages"].append(message)
        size += len(canonical_json(message).encode("utf-8")) + 1
        turn += 1
    return state


def human_size(size: int) -> str:
    """2048 -> '2 KB', 1048576 -> '1 MB'."""
    for unit, factor in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= factor:
            return f"{size / factor:g} {unit}"
    return f"{size} B"
