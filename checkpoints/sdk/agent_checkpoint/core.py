"""The `Checkpointable` mixin (state_dict / load_state_dict / clone), state diffs and schema migrations."""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar

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
