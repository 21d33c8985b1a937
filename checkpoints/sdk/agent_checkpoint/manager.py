"""`CheckpointManager` (save, load, list_keys, history, diff, rollback) on a memory, file or Cairn backend,
and the `@checkpoint` decorator."""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from checkpoints.sdk.agent_checkpoint.backends import Backend, CairnBackend, FileBackend, MemoryBackend
from checkpoints.sdk.agent_checkpoint.core import VERSION_KEY, Checkpointable, _diff
from checkpoints.sdk.client import Client

F = TypeVar("F", bound=Callable[..., Any])

BACKENDS = ("memory", "file", "cairn")


class CheckpointManager:
    """agent-checkpoint's manager.

    `CheckpointManager(backend="memory")` (the default), `CheckpointManager(backend="file", path=...,
    fmt="json" | "pickle")`, or on Cairn: `CheckpointManager(backend="cairn")` (CAIRN_URL, CAIRN_API_KEY),
    `CheckpointManager(client)`, `CheckpointManager.from_env()`. A backend object is accepted too.
    """

    def __init__(
        self,
        backend: str | Backend | Client = "memory",
        path: str | os.PathLike[str] | None = None,
        fmt: str = "json",
        *,
        client: Client | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        allow_pickle: bool = False,
    ) -> None:
        if isinstance(backend, Client):
            client, backend = backend, "cairn"
        if client is not None or base_url is not None:
            backend = "cairn"
        self.backend: Backend
        if not isinstance(backend, str):
            self.backend = backend
        elif backend == "memory":
            self.backend = MemoryBackend()
        elif backend == "file":
            if path is None:
                raise ValueError('backend="file" needs path=')
            self.backend = FileBackend(path, fmt, allow_pickle=allow_pickle)
        elif backend == "cairn":
            if client is None and base_url is not None:
                if api_key is None:
                    raise ValueError("pass base_url and api_key, or client")
                client = Client(base_url, api_key)
            self.backend = CairnBackend(client or Client.from_env(), allow_pickle=allow_pickle)
        else:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")

    @classmethod
    def from_env(cls, **options: Any) -> CheckpointManager:
        """A Cairn-backed manager for `CAIRN_URL` with the key in `CAIRN_API_KEY`."""
        return cls(Client.from_env(), **options)

    @property
    def client(self) -> Client:
        """The Cairn client of a Cairn-backed manager."""
        if not isinstance(self.backend, CairnBackend):
            raise AttributeError("only a Cairn-backed manager has a client")
        return self.backend.client

    def save(self, key: str, agent: Checkpointable) -> str:
        """Checkpoint the agent under `key`; returns the checkpoint id."""
        state = agent.state_dict()
        return self.backend.save(key, state, type(agent).__name__, str(state[VERSION_KEY]))

    def load(self, key: str, agent: Checkpointable, checkpoint_id: str | None = None) -> str:
        """Load the latest checkpoint of `key` (or `checkpoint_id`) into `agent`; returns the id loaded."""
        loaded_id, state = self.backend.load(key, checkpoint_id)
        agent.load_state_dict(state)
        return loaded_id

    def list_keys(self) -> list[str]:
        return self.backend.list_keys()

    def history(self, key: str, n: int = 5) -> list[dict[str, Any]]:
        """The last `n` checkpoints of `key`, newest first, as
        `{"id", "ts", "created_at", "version", "class"}`."""
        return self.backend.history(key, n)

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
            return _diff(self.backend.load(key, checkpoint_id_a)[1], agent.state_dict())
        if checkpoint_id_a is None:
            raise ValueError("pass agent=, or checkpoint_id_a (and optionally checkpoint_id_b)")
        return _diff(self.backend.load(key, checkpoint_id_a)[1], self.backend.load(key, checkpoint_id_b)[1])

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
