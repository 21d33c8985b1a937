"""agent-checkpoint's memory and file backends, as the seed's: save / load / history / list_keys / diff /
rollback with `CheckpointManager(backend=..., path=..., fmt=...)`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpoints.sdk.agent_checkpoint import Checkpointable, CheckpointManager


class Chat(Checkpointable):
    def __init__(self) -> None:
        self.history: list[str] = []
        self.tokens = 0
        self.seen: set[str] = set()
        self._cache: dict[str, str] = {}


def _exercise(manager: CheckpointManager) -> None:
    agent = Chat()
    agent.history.append("Hello")
    agent.tokens, agent.seen = 5, {"hello"}
    first = manager.save("session_1", agent)
    agent.tokens = 13
    second = manager.save("session_1", agent)
    with pytest.raises(RuntimeError), manager.rollback_context("session_1", agent):
        agent.history.append("CORRUPTED")
        agent.tokens = 9999
        raise RuntimeError("API call failed mid-way")
    assert (agent.history, agent.tokens) == (["Hello"], 13)

    fresh = Chat()
    assert manager.load("session_1", fresh, first) == first
    assert (fresh.tokens, fresh.seen) == (5, {"hello"})  # a set comes back a set
    history = manager.history("session_1", n=2)
    assert [h["id"] for h in history][1] == second and history[0]["class"] == "Chat"
    assert history[0]["ts"] >= history[1]["ts"] and history[0]["version"] == "1.0"
    assert manager.diff("session_1", checkpoint_id_a=first, checkpoint_id_b=second)["changed"] == {
        "tokens": (5, 13)
    }
    assert manager.list_keys() == ["session_1"]
    with pytest.raises(KeyError):
        manager.load("nobody", Chat())


def test_it_keeps_checkpoints_in_memory() -> None:
    manager = CheckpointManager(backend="memory")
    _exercise(manager)
    agent = Chat()
    manager.save("copy", agent)
    agent.history.append("later")
    restored = Chat()
    manager.load("copy", restored)
    assert restored.history == []  # a deep copy was saved


@pytest.mark.parametrize("fmt", ["json", "pickle"])
def test_it_keeps_checkpoints_in_files_that_a_new_manager_reads(tmp_path: Path, fmt: str) -> None:
    _exercise(CheckpointManager(backend="file", path=tmp_path, fmt=fmt))
    files = sorted(tmp_path.glob(f"session_1/*.{fmt}"))
    assert len(files) == 3  # two saves and the rollback's
    if fmt == "json":
        assert json.loads(files[0].read_text())["state"]["history"] == ["Hello"]
    again = CheckpointManager(backend="file", path=tmp_path, fmt=fmt)
    agent = Chat()
    again.load("session_1", agent)
    assert agent.tokens == 13


def test_it_refuses_unknown_backends_and_formats(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="backend must be one of memory, file, cairn"):
        CheckpointManager(backend="s3")
    with pytest.raises(ValueError, match="fmt must be one of json, pickle"):
        CheckpointManager(backend="file", path=tmp_path, fmt="yaml")
    with pytest.raises(ValueError, match="path="):
        CheckpointManager(backend="file")
