"""agent-checkpoint parity: the `Checkpointable` mixin (state_dict / load_state_dict / clone), a manager that
keeps checkpoints in Cairn (save, load, history, diff, rollback), the `@checkpoint` decorator, and schema
migrations.

    from checkpoints.sdk.agent_checkpoint import Checkpointable, CheckpointManager, checkpoint

    class MyAgent(Checkpointable):
        def __init__(self):
            self.memory, self.call_count, self._cache = [], 0, {}   # _cache is not checkpointed

    manager = CheckpointManager.from_env()               # was: CheckpointManager(backend="memory")
    manager.save("session_123", agent)
    with manager.rollback("before_risky_op", agent):     # restores on exception, re-raises
        risky_operation(agent)

Each key is a Cairn thread and each save a checkpoint in it (agent_id = the class name, schema_version = the
class's checkpoint version), so history, lineage, diffs and TTLs come from Cairn. States are stored with a
tagged encoding (checkpoints.sdk.tagged): tuples, sets, datetimes and int dict keys come back as they were,
and pickle is never used unless the manager is created with `allow_pickle=True`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from checkpoints.sdk import tagged
from checkpoints.sdk.client import Client
from checkpoints.sdk.errors import Conflict

F = TypeVar("F", bound=Callable[..., Any])
A = TypeVar("A", bound="Checkpointable")

VERSION_KEY = "__version__"
CLASS_KEY = "__class__"
DEFAULT_VERSION = "1.0"
MAX_MIGRATION_STEPS = 100

# class name -> {from_version: (migration, to_version or None)}
_MIGRATIONS: dict[str, dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], str | None]]] = {}
_CLASSES: dict[str, type[Checkpointable]] = {}
_registry_lock = threading.Lock()


class MigrationError(RuntimeError):
    """A saved state's version cannot be brought to the class's current version."""


def _version_key(version: str) -> tuple[Any, ...]:
    """ "1.10" sorts after "1.9": numeric parts compare as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"[.\-_]", version))


def register_migration(
    cls_name: str | type,
    from_version: str,
    fn: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    to_version: str | None = None,
) -> None:
    """Register `fn(state) -> state` to migrate `cls_name`'s states saved at `from_version`.

    The version it leads to is `to_version`, else the `__version__` the returned state sets, else the next
    registered version of the class (or the class's current one). Loading applies migrations as a chain until
    the class's current version.
    """
    name = cls_name if isinstance(cls_name, str) else cls_name.__name__
    with _registry_lock:
        _MIGRATIONS.setdefault(name, {})[from_version] = (fn, to_version)


def migrate(cls_name: str, state: dict[str, Any], from_version: str, to_version: str) -> dict[str, Any]:
    """Apply registered migrations from `from_version` until `to_version`; MigrationError if no path."""
    steps = _MIGRATIONS.get(cls_name, {})
    version, visited = from_version, list[str]()
    while version != to_version:
        if version not in steps:
            known = ", ".join(sorted(steps, key=_version_key)) or "none"
            raise MigrationError(
                f"No migration path for {cls_name} from version {from_version} to {to_version}: nothing is "
                f"registered from {version} (migrations registered from: {known})"
            )
        if version in visited or len(visited) > MAX_MIGRATION_STEPS:
            raise MigrationError(f"Migrations of {cls_name} loop: {' -> '.join([*visited, version])}")
        visited.append(version)
        fn, target = steps[version]
        state = fn(dict(state))
        returned = state.get(VERSION_KEY)
        later = sorted((v for v in steps if _version_key(v) > _version_key(version)), key=_version_key)
        version = (
            target
            or (returned if returned not in (None, version) else None)
            or (later[0] if later else to_version)
        )
        state[VERSION_KEY] = version
    return state


class Checkpointable:
    """Mixin: `state_dict()` captures the public attributes (or `_checkpoint_fields()`), nested
    Checkpointables recursively, plus `__version__` and `__class__`; `load_state_dict()` restores them
    (migrating old versions first); `clone()` is a deep copy through the state."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        with _registry_lock:
            _CLASSES[cls.__name__] = cls

    def _checkpoint_version(self) -> str:
        """The version of this class's state layout (override when it changes; see register_migration)."""
        return DEFAULT_VERSION

    def _checkpoint_fields(self) -> list[str] | None:
        """The attributes to capture; None (default) means every attribute not starting with `_`."""
        return None

    def state_dict(self) -> dict[str, Any]:
        names = self._checkpoint_fields()
        if names is None:
            names = [name for name in vars(self) if not name.startswith("_")]
        state: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            state[name] = value.state_dict() if isinstance(value, Checkpointable) else value
        state[VERSION_KEY] = self._checkpoint_version()
        state[CLASS_KEY] = type(self).__name__
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = dict(state)
        saved_class = state.pop(CLASS_KEY, type(self).__name__)
        if saved_class != type(self).__name__:
            raise TypeError(f"a state of {saved_class} cannot be loaded into {type(self).__name__}")
        version, current = state.pop(VERSION_KEY, DEFAULT_VERSION), self._checkpoint_version()
        if version != current:
            state = migrate(saved_class, state, version, current)
            state.pop(VERSION_KEY, None)
        for name, value in state.items():
            setattr(self, name, self._restored(getattr(self, name, None), value))

    @staticmethod
    def _restored(current: Any, value: Any) -> Any:
        """Nested Checkpointables load into the instance already there, or into a new one of their class."""
        if not (isinstance(value, dict) and isinstance(value.get(CLASS_KEY), str)):
            return value
        if isinstance(current, Checkpointable) and type(current).__name__ == value[CLASS_KEY]:
            current.load_state_dict(value)
            return current
        cls = _CLASSES.get(value[CLASS_KEY])
        if cls is None:
            return value
        fresh = _blank(cls)
        fresh.load_state_dict(value)
        return fresh

    def clone(self: A) -> A:
        """A new instance with a deep copy of this one's state (private attributes as a fresh instance has
        them)."""
        twin = _blank(type(self))
        twin.load_state_dict(copy.deepcopy(self.state_dict()))
        return twin


def _blank(cls: type[A]) -> A:
    try:
        return cls()
    except TypeError:  # __init__ needs arguments: build without it, the state fills the fields
        return cls.__new__(cls)


def _fields(state: dict[str, Any]) -> set[str]:
    return {name for name in state if name not in (VERSION_KEY, CLASS_KEY)}


def _diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    old, new = _fields(before), _fields(after)
    return {
        "added": {k: after[k] for k in sorted(new - old)},
        "removed": {k: before[k] for k in sorted(old - new)},
        "changed": {k: (before[k], after[k]) for k in sorted(old & new) if before[k] != after[k]},
    }


class CheckpointManager:
    """agent-checkpoint's manager, backed by Cairn: one thread per key (tagged `agent-checkpoint`)."""

    TAG = "agent-checkpoint"

    def __init__(
        self,
        client: Client | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        allow_pickle: bool = False,
    ) -> None:
        if client is None and (base_url is None or api_key is None):
            raise ValueError("pass client, or base_url and api_key")
        self.client = client or Client(base_url or "", api_key or "")
        self.allow_pickle = allow_pickle
        self._known_keys: set[str] = set()

    @classmethod
    def from_env(cls, **options: Any) -> CheckpointManager:
        return cls(Client.from_env(), **options)

    def _ensure_key(self, key: str) -> None:
        if key in self._known_keys:
            return
        # Conflict: saved before (or by another process), so the thread is there.
        with contextlib.suppress(Conflict):
            self.client.thread_create(key, tags=[self.TAG], name=key)
        self._known_keys.add(key)

    def save(self, key: str, agent: Checkpointable) -> str:
        """Checkpoint the agent under `key`; returns the checkpoint id."""
        state = agent.state_dict()
        encoded = tagged.encode(state, allow_pickle=self.allow_pickle)
        self._ensure_key(key)
        saved = self.client.checkpoint_save(
            thread_id=key,
            agent_id=type(agent).__name__,
            state=encoded,
            schema_version=str(state[VERSION_KEY])[:32],
            step_name="save",
        )
        return saved.checkpoint.checkpoint_id

    def _state(self, key: str, checkpoint_id: str | None) -> tuple[str, dict[str, Any]]:
        stored = (
            self.client.checkpoint_get(key, checkpoint_id) if checkpoint_id else self.client.thread_state(key)
        )
        return stored.checkpoint_id, tagged.decode(stored.state, allow_pickle=self.allow_pickle)

    def load(self, key: str, agent: Checkpointable, checkpoint_id: str | None = None) -> str:
        """Load the latest checkpoint of `key` (or `checkpoint_id`) into `agent`; returns the id loaded."""
        loaded_id, state = self._state(key, checkpoint_id)
        agent.load_state_dict(state)
        return loaded_id

    def list_keys(self) -> list[str]:
        return sorted(t.thread_id for t in self.client.paginate(self.client.threads_list, tags=[self.TAG]))

    def history(self, key: str, n: int = 5) -> list[dict[str, Any]]:
        """The last `n` checkpoints of `key`, newest first, as
        `{"id", "ts", "created_at", "version", "class"}`."""
        page = self.client.checkpoints_list(key, limit=n)
        return [
            {
                "id": c.checkpoint_id,
                "ts": c.created_at.timestamp(),
                "created_at": c.created_at,
                "version": c.schema_version,
                "class": c.agent_id,
            }
            for c in page
        ]

    def diff(
        self,
        key: str,
        agent: Checkpointable | None = None,
        checkpoint_id_a: str | None = None,
        checkpoint_id_b: str | None = None,
    ) -> dict[str, dict[str, Any]]:
        """`{"added", "removed", "changed": {field: (before, after)}}` between the latest checkpoint and
        `agent`, or between two checkpoints of `key` (a: before, b: after; b defaults to the latest)."""
        if agent is not None:
            return _diff(self._state(key, checkpoint_id_a)[1], agent.state_dict())
        if checkpoint_id_a is None:
            raise ValueError("pass agent=, or checkpoint_id_a (and optionally checkpoint_id_b)")
        return _diff(self._state(key, checkpoint_id_a)[1], self._state(key, checkpoint_id_b)[1])

    @contextmanager
    def rollback(self, key: str, agent: Checkpointable) -> Iterator[str]:
        """Checkpoint the agent, run the block, and on any exception restore that checkpoint and re-raise."""
        checkpoint_id = self.save(key, agent)
        try:
            yield checkpoint_id
        except BaseException:
            self.load(key, agent, checkpoint_id)
            raise

    rollback_context = rollback


def checkpoint(
    manager: CheckpointManager, key: str | Callable[[Any], str], every: int = 1
) -> Callable[[F], F]:
    """Decorate `fn(agent, ...)`: after every `every`-th completed call, checkpoint the agent under `key`
    (a string, or a function of the agent). Works on methods (the agent is `self`) and coroutines."""
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be a positive integer, got {every!r}")

    def decorate(fn: F) -> F:
        lock = threading.Lock()
        calls = 0

        def due(agent: Any) -> str | None:
            nonlocal calls
            with lock:
                calls += 1
                if calls % every:
                    return None
            return key(agent) if callable(key) else key

        if asyncio.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(agent: Any, *args: Any, **kwargs: Any) -> Any:
                result = await fn(agent, *args, **kwargs)
                if (name := due(agent)) is not None:
                    await asyncio.to_thread(manager.save, name, agent)
                return result

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(agent: Any, *args: Any, **kwargs: Any) -> Any:
            result = fn(agent, *args, **kwargs)
            if (name := due(agent)) is not None:
                manager.save(name, agent)
            return result

        return cast(F, wrapper)

    return decorate


CairnCheckpointManager = CheckpointManager
