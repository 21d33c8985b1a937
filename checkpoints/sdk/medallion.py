"""medallion parity: `checkpoint_session` and `load_medallions_for_scope`, with the seed's models, on Cairn.

    from checkpoints.sdk import Client
    from checkpoints.sdk.medallion import (
        Evidence, MedallionScope, checkpoint_session, load_medallions_for_scope,
    )

    cairn = Client.from_env()
    scope = MedallionScope(graph_nodes=["repo:muse", "module:cli"], tags=["project_state"])
    medallion = checkpoint_session(cairn, scope, Evidence(session_summary="Implemented CLI routing"))
    for m in load_medallions_for_scope(cairn, MedallionScope(graph_nodes=["repo:muse"]), limit=5):
        print(m.meta.medallion_id, m.summary.high_level)

The seed's `store` and `llm` arguments become the client: the server stores, and its LLM provider (extractive
by default) writes the medallion. `checkpoint_session` creates or updates the medallion of exactly this scope
(never a narrower or overlapping one's), atomically, and every version is kept as a revision. Async twins:
`acheckpoint_session`, `aload_medallions_for_scope` (also under the seed's `_..._async` names).
"""

from __future__ import annotations

import time

from checkpoints.medallion_schema import (
    Affordances,
    Decision,
    Evidence,
    Medallion,
    MedallionMeta,
    MedallionScope,
    OpenQuestion,
    SchemaError,
    Subsystem,
    Summary,
)
from checkpoints.sdk import flows
from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.calls import medallions as md_calls
from checkpoints.sdk.calls.medallions import MedallionCheckpointResult
from checkpoints.sdk.client import Client
from checkpoints.sdk.errors import JobFailed
from checkpoints.sdk.models import Job, Page

SERVER_WAIT_SECONDS = 30  # the most `?wait=` the server accepts
MAX_PAGE = 500


def _checkpoint_session_flow(
    scope: MedallionScope, evidence: Evidence, thread_id: str | None, timeout: float, wait: float | None
) -> flows.Flow[Medallion]:
    deadline = time.monotonic() + timeout
    server_wait = min(timeout, SERVER_WAIT_SECONDS) if wait is None else min(wait, SERVER_WAIT_SECONDS)
    result: MedallionCheckpointResult = yield md_calls.medallion_checkpoint(
        scope, evidence, thread_id=thread_id, wait=server_wait
    )
    if result.medallion is not None:
        return result.medallion
    assert result.job is not None
    job: Job = result.job
    if job.status == "failed":
        raise JobFailed(f"job {job.job_id} failed: {job.error}", details={"job": job.raw})
    job = yield from flows.job_wait(job.job_id, timeout=max(0.0, deadline - time.monotonic()))
    medallion: Medallion = yield md_calls.medallion_get(str(job.result["medallion_id"]))
    return medallion


def _load_flow(scope: MedallionScope, limit: int) -> flows.Flow[list[Medallion]]:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    if scope.is_empty:
        # The seed returned every medallion for an empty scope; Cairn refuses it.
        raise ValueError("the scope is empty: name graph_nodes and/or tags")
    found: list[Medallion] = []
    cursor: str | None = None
    while len(found) < limit:
        page: Page[Medallion] = yield md_calls.medallions_list(
            graph_nodes=scope.graph_nodes,
            tags=scope.tags,
            limit=min(limit - len(found), MAX_PAGE),
            cursor=cursor,
        )
        found.extend(page.results)
        cursor = page.next_cursor
        if not cursor:
            break
    return found[:limit]


def checkpoint_session(
    client: Client,
    scope: MedallionScope,
    evidence: Evidence,
    *,
    thread_id: str | None = None,
    timeout: float = 60.0,
    wait: float | None = None,
) -> Medallion:
    """Create or update the medallion of exactly `scope` from `evidence`; returns it once the job is done
    (JobFailed if the summariser failed, TimeoutError after `timeout` seconds). `thread_id` records the
    source thread. `wait`: how long the server holds the first request for the job (default: up to 30 s
    of the timeout) before the SDK polls the job instead."""
    return client.run(_checkpoint_session_flow(scope, evidence, thread_id, timeout, wait))


def load_medallions_for_scope(client: Client, scope: MedallionScope, limit: int = 10) -> list[Medallion]:
    """Active medallions whose graph_nodes include all of `scope.graph_nodes` and whose tags overlap
    `scope.tags` (an empty side imposes nothing), newest update first. Complete: every match is found."""
    return client.run(_load_flow(scope, limit))


async def acheckpoint_session(
    client: AsyncClient,
    scope: MedallionScope,
    evidence: Evidence,
    *,
    thread_id: str | None = None,
    timeout: float = 60.0,
    wait: float | None = None,
) -> Medallion:
    """Async `checkpoint_session`."""
    return await client.run(_checkpoint_session_flow(scope, evidence, thread_id, timeout, wait))


async def aload_medallions_for_scope(
    client: AsyncClient, scope: MedallionScope, limit: int = 10
) -> list[Medallion]:
    """Async `load_medallions_for_scope`."""
    return await client.run(_load_flow(scope, limit))


# The seed's names for the async helpers.
_checkpoint_session_async = acheckpoint_session
_load_medallions_for_scope_async = aload_medallions_for_scope

__all__ = [
    "Affordances",
    "Decision",
    "Evidence",
    "Medallion",
    "MedallionMeta",
    "MedallionScope",
    "OpenQuestion",
    "SchemaError",
    "Subsystem",
    "Summary",
    "acheckpoint_session",
    "aload_medallions_for_scope",
    "checkpoint_session",
    "load_medallions_for_scope",
]
