"""Where a `CheckpointManager` keeps states: in memory, in files (JSON or pickle), or in Cairn.

Every backend stores a key's checkpoints in order and answers `save(key, state, agent_id, version)` -> id,
`load(key, checkpoint_id=None)` -> (id, state) (the latest when no id; KeyError if none), `list_keys()` and
`history(key, n)` (newest first, `{"id", "ts", "created_at", "version", "class"}`).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import os
import pickle  # nosec B403 # only for fmt="pickle" files, which the user chose to write and read
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, unquote

from checkpoints.sdk import tagged
from checkpoints.sdk.client import Client
from checkpoints.sdk.errors import Conflict

FORMATS = ("json", "pickle")


class Backend(Protocol):
    def save(self, key: str, state: dict[str, Any], agent_id: str, version: str) -> str: ...

    def load(self, key: str, checkpoint_id: str | None = None) -> tuple[str, dict[str, Any]]: ...

    def list_keys(self) -> list[str]: ...

    def history(self, key: str, n: int = 5) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Entry:
    id: str
    ts: float
    version: str
    agent_id: str

    def described(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ts": self.ts,
            "created_at": datetime.fromtimestamp(self.ts, UTC),
            "version": self.version,
            "class": self.agent_id,
        }


_sequence = itertools.count()


def _new_id(key: str) -> tuple[str, float]:
    """The seed's `<key>_<timestamp>` ids, with a counter so two saves in one tick never collide."""
    ts = time.time()
    return f"{key}_{time.time_ns()}_{next(_sequence)}", ts


def _missing(key: str, checkpoint_id: str | None) -> KeyError:
    return KeyError(
        f"no checkpoint {checkpoint_id!r} for key {key!r}" if checkpoint_id else f"no key {key!r}"
    )


class MemoryBackend:
    """In-process dict store (deep copies: later changes to the agent never reach a saved state)."""

    def __init__(self) -> None:
        self._entries: dict[str, list[tuple[Entry, dict[str, Any]]]] = {}
        self._lock = threading.Lock()

    def save(self, key: str, state: dict[str, Any], agent_id: str, version: str) -> str:
        checkpoint_id, ts = _new_id(key)
        with self._lock:
            self._entries.setdefault(key, []).append(
                (Entry(checkpoint_id, ts, version, agent_id), copy.deepcopy(state))
            )
        return checkpoint_id

    def load(self, key: str, checkpoint_id: str | None = None) -> tuple[str, dict[str, Any]]:
        with self._lock:
            for entry, state in reversed(self._entries.get(key, [])):
                if checkpoint_id in (None, entry.id):
                    return entry.id, copy.deepcopy(state)
        raise _missing(key, checkpoint_id)

    def list_keys(self) -> list[str]:
        with self._lock:
            return sorted(self._entries)

    def history(self, key: str, n: int = 5) -> list[dict[str, Any]]:
        with self._lock:
            entries = [entry for entry, _ in self._entries.get(key, [])]
        return [entry.described() for entry in reversed(entries)][:n]


class FileBackend:
    """One directory per key under `path`, one file per checkpoint: JSON (tagged encoding: tuples, sets,
    datetimes, int keys come back as they were) or pickle (`fmt="pickle"`: any object, and only for files
    you trust, as loading pickle runs code)."""

    def __init__(
        self, path: str | os.PathLike[str], fmt: str = "json", *, allow_pickle: bool = False
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, got {fmt!r}")
        self.path = Path(path)
        self.fmt = fmt
        self.allow_pickle = allow_pickle
        self.path.mkdir(parents=True, exist_ok=True)

    def _dir(self, key: str) -> Path:
        return self.path / quote(key, safe="")

    def _write(self, target: Path, document: dict[str, Any]) -> None:
        # Write then rename: a crash never leaves a half-written checkpoint behind.
        partial = target.with_name(target.name + ".partial")
        if self.fmt == "json":
            partial.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        else:
            partial.write_bytes(pickle.dumps(document))
        partial.replace(target)

    def _read(self, source: Path) -> dict[str, Any]:
        if self.fmt == "json":
            document = json.loads(source.read_text(encoding="utf-8"))
            document["state"] = tagged.decode(document["state"], allow_pickle=self.allow_pickle)
            return dict(document)
        return dict(pickle.loads(source.read_bytes()))  # nosec B301 # the user chose fmt="pickle" (own files)

    def _files(self, key: str) -> list[Path]:
        """The key's checkpoint files, oldest first (their names are zero-padded save times)."""
        folder = self._dir(key)
        return sorted(folder.glob(f"*.{self.fmt}")) if folder.is_dir() else []

    def save(self, key: str, state: dict[str, Any], agent_id: str, version: str) -> str:
        checkpoint_id, ts = _new_id(key)
        folder = self._dir(key)
        folder.mkdir(exist_ok=True)
        stored = tagged.encode(state, allow_pickle=self.allow_pickle) if self.fmt == "json" else state
        document = {
            "id": checkpoint_id,
            "ts": ts,
            "version": version,
            "class": agent_id,
            "state": stored,
        }
        self._write(folder / f"{time.time_ns():020d}{next(_sequence) % 1000:03d}.{self.fmt}", document)
        return checkpoint_id

    def load(self, key: str, checkpoint_id: str | None = None) -> tuple[str, dict[str, Any]]:
        for source in reversed(self._files(key)):
            document = self._read(source)
            if checkpoint_id in (None, document["id"]):
                return str(document["id"]), dict(document["state"])
        raise _missing(key, checkpoint_id)

    def list_keys(self) -> list[str]:
        return sorted(unquote(folder.name) for folder in self.path.iterdir() if folder.is_dir())

    def history(self, key: str, n: int = 5) -> list[dict[str, Any]]:
        documents = [self._read(source) for source in reversed(self._files(key))][:n]
        return [Entry(d["id"], d["ts"], d["version"], d["class"]).described() for d in documents]


class CairnBackend:
    """Cairn: one thread per key (tagged `agent-checkpoint`), one checkpoint per save (agent_id = the class
    name, schema_version = its checkpoint version), so lineage, diffs and TTLs come from Cairn."""

    TAG = "agent-checkpoint"

    def __init__(self, client: Client, *, allow_pickle: bool = False) -> None:
        self.client = client
        self.allow_pickle = allow_pickle
        self._known_keys: set[str] = set()

    def _ensure_key(self, key: str) -> None:
        if key in self._known_keys:
            return
        # Conflict: saved before (or by another process), so the thread is there.
        with contextlib.suppress(Conflict):
            self.client.thread_create(key, tags=[self.TAG], name=key)
        self._known_keys.add(key)

    def save(self, key: str, state: dict[str, Any], agent_id: str, version: str) -> str:
        encoded = tagged.encode(state, allow_pickle=self.allow_pickle)
        self._ensure_key(key)
        saved = self.client.checkpoint_save(
            thread_id=key, agent_id=agent_id, state=encoded, schema_version=version[:32], step_name="save"
        )
        return saved.checkpoint.checkpoint_id

    def load(self, key: str, checkpoint_id: str | None = None) -> tuple[str, dict[str, Any]]:
        stored = (
            self.client.checkpoint_get(key, checkpoint_id) if checkpoint_id else self.client.thread_state(key)
        )
        return stored.checkpoint_id, tagged.decode(stored.state, allow_pickle=self.allow_pickle)

    def list_keys(self) -> list[str]:
        return sorted(t.thread_id for t in self.client.paginate(self.client.threads_list, tags=[self.TAG]))

    def history(self, key: str, n: int = 5) -> list[dict[str, Any]]:
        return [
            {
                "id": c.checkpoint_id,
                "ts": c.created_at.timestamp(),
                "created_at": c.created_at,
                "version": c.schema_version,
                "class": c.agent_id,
            }
            for c in self.client.checkpoints_list(key, limit=n)
        ]
