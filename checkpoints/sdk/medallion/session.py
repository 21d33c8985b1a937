"""`checkpoint_session` and `load_medallions_for_scope` with the seed's signatures, sync and async.

`store` is a `MedallionStore`, a `Client` or an `AsyncClient`. `llm` is the user's `MedallionLLM` (run here,
in the agent's process) or None (the server's provider writes the medallion, as a job).
"""

from __future__ import annotations

import asyncio
from typing import Any

from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.client import Client
from checkpoints.sdk.client_steps import Steps, arun, run
from checkpoints.sdk.medallion.errors import store_errors
from checkpoints.sdk.medallion.models import Evidence, Medallion, MedallionScope
from checkpoints.sdk.medallion.steps import MedallionLLM, llm_session_steps, load_steps, server_session_steps
from checkpoints.sdk.medallion.store import MedallionStore

Store = MedallionStore | Client | AsyncClient


def _session_steps(
    llm: MedallionLLM | None,
    scope: MedallionScope,
    evidence: Evidence,
    thread_id: str | None,
    timeout: float,
    wait: float | None,
) -> Steps[Medallion]:
    scope = MedallionScope.model_validate(scope.to_dict())
    evidence = Evidence(**evidence.to_dict())
    if llm is None:
        return server_session_steps(scope, evidence, thread_id, timeout, wait)
    return llm_session_steps(llm, scope, evidence, thread_id)


def _client(store: Store) -> Client | AsyncClient:
    return store.client if isinstance(store, MedallionStore) else store


async def _drive(store: Store, steps: Steps[Any], llm: MedallionLLM | None) -> Any:
    client = _client(store)
    if isinstance(client, Client):
        return await asyncio.to_thread(run, client, steps)
    if llm is None:
        return await arun(client, steps)
    with store_errors():
        return await arun(client, steps)


def _drive_sync(store: Store, steps: Steps[Any], llm: MedallionLLM | None) -> Any:
    client = _client(store)
    if isinstance(client, AsyncClient):
        return asyncio.run(_drive(store, steps, llm))
    if llm is None:
        return run(client, steps)
    with store_errors():
        return run(client, steps)


def checkpoint_session(
    store: Store,
    llm: MedallionLLM | None,
    scope: MedallionScope,
    evidence: Evidence,
    *,
    thread_id: str | None = None,
    timeout: float = 60.0,
    wait: float | None = None,
) -> Medallion:
    """Create or update the medallion of exactly `scope` (never a broader or overlapping scope's) from
    `evidence`; returns it as stored. With `llm`: its `generate` or `update` writes the medallion here
    (LLMError if it fails, SchemaValidationError if its answer is invalid, StoreError if the server refuses
    it). Without: the server's provider writes it (JobFailed, TimeoutError after `timeout` seconds; `wait`
    is how long the server holds the first request). `thread_id` records the source thread. Like the seed,
    the sync form runs an async store or LLM with `asyncio.run`: inside an event loop, await
    `acheckpoint_session`."""
    return _drive_sync(store, _session_steps(llm, scope, evidence, thread_id, timeout, wait), llm)


async def acheckpoint_session(
    store: Store,
    llm: MedallionLLM | None,
    scope: MedallionScope,
    evidence: Evidence,
    *,
    thread_id: str | None = None,
    timeout: float = 60.0,
    wait: float | None = None,
) -> Medallion:
    """Async `checkpoint_session`."""
    return await _drive(store, _session_steps(llm, scope, evidence, thread_id, timeout, wait), llm)


def load_medallions_for_scope(
    store: Store, scope: MedallionScope, limit: int = 10, query: str | None = None
) -> list[Medallion]:
    """Active medallions whose graph_nodes include all of `scope.graph_nodes` and whose tags overlap
    `scope.tags` (an empty side imposes nothing), newest update first. Complete: every match is found.
    With `query`, the same medallions ranked by meaning, the closest first (`POST medallions/search/`,
    docs/medallions.md). ValueError for an empty scope or query, or a limit below 1."""
    steps = load_steps(MedallionScope.model_validate(scope.to_dict()), limit, query)
    return _drive_sync(store, steps, None)


async def aload_medallions_for_scope(
    store: Store, scope: MedallionScope, limit: int = 10, query: str | None = None
) -> list[Medallion]:
    """Async `load_medallions_for_scope`."""
    steps = load_steps(MedallionScope.model_validate(scope.to_dict()), limit, query)
    return await _drive(store, steps, None)


# The seed's names for the async helpers.
_checkpoint_session_async = acheckpoint_session
_load_medallions_for_scope_async = aload_medallions_for_scope
