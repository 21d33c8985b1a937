"""agent-checkpoint parity: Checkpointable, the tagged encoding, migrations (no server), and the Cairn-backed
manager, rollback and @checkpoint (against a live server)."""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pytest

from checkpoints.sdk import Client, tagged
from checkpoints.sdk.agent_checkpoint import (
    Checkpointable,
    CheckpointManager,
    MigrationError,
    checkpoint,
    register_migration,
)
from checkpoints.sdk.agent_checkpoint.core import _MIGRATIONS


class Tool(Checkpointable):
    def __init__(self) -> None:
        self.uses = 0


class Agent(Checkpointable):
    def __init__(self) -> None:
        self.memory: list[Any] = []
        self.seen: set[str] = set()
        self.last: tuple[int, int] = (0, 0)
        self.scores: dict[int, float] = {}
        self.started: datetime | None = None
        self.tool = Tool()
        self._cache: dict[str, Any] = {"not": "saved"}

    def reply(self, message: str) -> str:
        self.memory.append(message)
        self.seen.add(message)
        return f"#{len(self.memory)}"


@pytest.fixture
def migrations() -> Iterator[None]:
    saved = {name: dict(steps) for name, steps in _MIGRATIONS.items()}
    yield
    _MIGRATIONS.clear()
    _MIGRATIONS.update(saved)


def test_the_tagged_encoding_round_trips_python_types() -> None:
    value = {
        "tuple": (1, (2, 3)),
        "set": {"b", "a"},
        "frozen": frozenset({1}),
        "aware": datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        "naive": datetime(2026, 1, 2, 3, 4, 5),  # noqa: DTZ001 - a naive value must round-trip naive
        "day": date(2026, 1, 2),
        "clock": time(3, 4, 5),
        "span": timedelta(days=1, seconds=2, microseconds=3),
        "money": Decimal("10.50"),
        "id": uuid.UUID(int=7),
        "blob": b"\x00\xff",
        "inf": math.inf,
        "int keys": {1: "one", 2: {3: "nested"}},
        "tuple keys": {(1, 2): "pair"},
        "tagged-looking": {"__type__": "tuple", "items": []},
        "plain": {"list": [1, "two", None, True, 2.5]},
    }
    encoded = tagged.encode(value)
    assert encoded["plain"] == value["plain"]  # plain JSON stays readable
    decoded = tagged.decode(encoded)
    assert decoded == value
    assert type(decoded["tuple"]) is tuple and type(decoded["frozen"]) is frozenset
    assert math.isnan(tagged.decode(tagged.encode(math.nan)))
    with pytest.raises(TypeError, match=r"\$\.obj: builtins.object"):
        tagged.encode({"obj": object()})
    pickled = tagged.encode({"obj": Tool}, allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        tagged.decode(pickled)
    assert tagged.decode(pickled, allow_pickle=True) == {"obj": Tool}


def test_state_dict_follows_the_seed_rules() -> None:
    agent = Agent()
    agent.reply("hello")
    state = agent.state_dict()
    assert state["memory"] == ["hello"] and "_cache" not in state
    assert state["__version__"] == "1.0" and state["__class__"] == "Agent"
    assert state["tool"] == {"uses": 0, "__version__": "1.0", "__class__": "Tool"}

    class Pinned(Agent):
        def _checkpoint_fields(self) -> list[str]:
            return ["memory"]

    assert set(Pinned().state_dict()) == {"memory", "__version__", "__class__"}

    clone = agent.clone()
    clone.reply("world")
    clone.tool.uses = 5
    assert agent.memory == ["hello"] and agent.tool.uses == 0
    assert clone.memory == ["hello", "world"] and clone._cache == {"not": "saved"}
    with pytest.raises(TypeError, match="cannot be loaded"):
        Tool().load_state_dict(agent.state_dict())


def test_migrations_apply_as_a_chain_and_fail_clearly_without_a_path(migrations: None) -> None:
    class Scored(Checkpointable):
        def __init__(self) -> None:
            self.score = 0
            self.level = "none"

        def _checkpoint_version(self) -> str:
            return "3.0"

    def v1_to_v2(state: dict[str, Any]) -> dict[str, Any]:
        state["score"] = state.pop("points", 0) * 10
        return state

    def v2_to_v3(state: dict[str, Any]) -> dict[str, Any]:
        state["level"] = "high" if state["score"] > 50 else "low"
        return state

    register_migration("Scored", from_version="1.0", fn=v1_to_v2)
    register_migration(Scored, from_version="2.0", fn=v2_to_v3)
    agent = Scored()
    agent.load_state_dict({"points": 7, "__version__": "1.0", "__class__": "Scored"})
    assert (agent.score, agent.level) == (70, "high")

    with pytest.raises(MigrationError, match=r"from version 0\.5 to 3\.0: nothing is registered from 0\.5"):
        Scored().load_state_dict({"points": 1, "__version__": "0.5", "__class__": "Scored"})
    register_migration("Scored", "9.0", lambda s: {**s, "__version__": "9.1"})
    register_migration("Scored", "9.1", lambda s: {**s, "__version__": "9.0"})
    with pytest.raises(MigrationError, match="loop"):
        Scored().load_state_dict({"__version__": "9.0", "__class__": "Scored"})


def test_the_manager_saves_loads_lists_and_diffs_through_cairn(client: Client) -> None:
    manager = CheckpointManager(client)
    agent = Agent()
    agent.reply("hello")
    agent.last = (1, 2)
    agent.scores = {1: 0.5, 2: 0.25}
    agent.started = datetime(2026, 1, 2, tzinfo=UTC)
    first = manager.save("session_123", agent)
    agent.reply("world")
    second = manager.save("session_123", agent)

    fresh = Agent()
    assert manager.load("session_123", fresh) == second
    assert fresh.memory == ["hello", "world"] and fresh.seen == {"hello", "world"}
    assert fresh.last == (1, 2) and fresh.scores == {1: 0.5, 2: 0.25}  # tuple and int keys survive
    assert fresh.started == datetime(2026, 1, 2, tzinfo=UTC) and isinstance(fresh.tool, Tool)
    manager.load("session_123", fresh, checkpoint_id=first)
    assert fresh.memory == ["hello"]

    history = manager.history("session_123", n=5)
    assert [h["id"] for h in history] == [second, first]
    assert history[0]["ts"] >= history[1]["ts"] and history[0]["class"] == "Agent"
    assert manager.list_keys() == ["session_123"]

    agent.tool.uses = 3
    diff = manager.diff("session_123", agent=agent)
    assert diff["changed"] == {
        "tool": ({"uses": 0, "__version__": "1.0", "__class__": "Tool"}, agent.tool.state_dict())
    }
    between = manager.diff("session_123", checkpoint_id_a=first, checkpoint_id_b=second)
    assert between == {
        "added": {},
        "removed": {},
        "changed": {"memory": (["hello"], ["hello", "world"]), "seen": ({"hello"}, {"hello", "world"})},
    }
    stored = client.thread_state("session_123").state
    assert stored["last"] == {"__type__": "tuple", "items": [1, 2]}  # readable in the dashboard too


def test_rollback_restores_on_exception_and_reraises(client: Client) -> None:
    manager = CheckpointManager(client)
    agent = Agent()
    agent.reply("Hello")
    with pytest.raises(RuntimeError, match="API call failed"), manager.rollback("before_risky_op", agent):
        agent.reply("CORRUPTED")
        agent.tool.uses = 9999
        raise RuntimeError("API call failed mid-way")
    assert agent.memory == ["Hello"] and agent.tool.uses == 0
    with manager.rollback_context("before_risky_op", agent):
        agent.reply("kept")
    assert agent.memory == ["Hello", "kept"]


def test_the_decorator_checkpoints_every_n_calls(client: Client) -> None:
    manager = CheckpointManager(client)

    @checkpoint(manager, key="auto", every=3)
    def process(agent: Agent, message: str) -> str:
        return agent.reply(message)

    agent = Agent()
    for n in range(7):
        process(agent, f"m{n}")
    saved = manager.history("auto", n=10)
    assert len(saved) == 2  # after calls 3 and 6
    restored = Agent()
    manager.load("auto", restored)
    assert restored.memory == [f"m{n}" for n in range(6)]

    @checkpoint(manager, key=lambda agent: f"per-agent-{len(agent.memory)}", every=1)
    async def areply(agent: Agent, message: str) -> str:
        return agent.reply(message)

    asyncio.run(areply(agent, "async"))
    assert "per-agent-8" in manager.list_keys()
    with pytest.raises(ValueError, match="every"):
        checkpoint(manager, key="x", every=0)
