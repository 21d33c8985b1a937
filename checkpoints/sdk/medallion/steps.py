"""medallion's session logic as steps on Cairn's public client methods (one source for both clients).

With a user's LLM, the medallion is written here and stored through `POST medallions/` (create) or `PATCH
medallions/{id}/` (update, at the version the LLM read: a concurrent change makes it re-read and retry), so
the server validates it, keeps a revision of every version, and settles races for one scope. Without one,
the server's provider writes it (`POST medallions/checkpoint/`, a job).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from checkpoints.integrity import format_timestamp
from checkpoints.sdk.client_steps import Steps, UserCall, call
from checkpoints.sdk.errors import Conflict, JobFailed, PreconditionFailed
from checkpoints.sdk.medallion.errors import LLMError, MedallionError, StoreError
from checkpoints.sdk.medallion.models import Evidence, Medallion, MedallionScope, adopt
from checkpoints.sdk.models import Job, Page

SERVER_WAIT_SECONDS = 30  # the most `?wait=` the server accepts
MAX_PAGE = 500
MAX_WRITE_ATTEMPTS = 5


class MedallionLLM(Protocol):
    """The seed's LLM interface: writes a new medallion, or merges evidence into an existing one (coroutines,
    or plain functions)."""

    def generate(self, scope: MedallionScope, evidence: Evidence) -> Any: ...

    def update(self, existing: Medallion, new_evidence: Evidence) -> Any: ...


def _ts(value: Any) -> str | None:
    return None if value is None else format_timestamp(value)


def content_document(medallion: Medallion) -> dict[str, Any]:
    return {name: value for name, value in medallion.to_dict().items() if name not in ("meta", "scope")}


def create_document(medallion: Medallion, thread_id: str | None = None) -> dict[str, Any]:
    """`POST medallions/`: scope, content and the writable meta (the server assigns id, version, times)."""
    meta = medallion.meta
    return {
        "scope": medallion.scope.to_dict(),
        **content_document(medallion),
        "meta": {
            "model": meta.model,
            "knowledge_min_ts": _ts(meta.knowledge_min_ts),
            "knowledge_max_ts": _ts(meta.knowledge_max_ts),
            "source_thread_id": thread_id or meta.source_thread_id,
        },
    }


def update_document(medallion: Medallion) -> dict[str, Any]:
    """`PATCH medallions/{id}/`: status, content and the writable meta (the scope is the medallion's).
    `updated_at` too: moved later, it makes a new version even if nothing else changed, as in the seed."""
    meta = medallion.meta
    return {
        "status": meta.status,
        **content_document(medallion),
        "meta": {
            "model": meta.model,
            "knowledge_min_ts": _ts(meta.knowledge_min_ts),
            "knowledge_max_ts": _ts(meta.knowledge_max_ts),
            "updated_at": _ts(meta.updated_at),
        },
    }


def _check(scope: MedallionScope) -> None:
    if scope.is_empty:
        # The seed matched every medallion for an empty scope; Cairn refuses it.
        raise ValueError("the scope is empty: name graph_nodes and/or tags")


def load_steps(scope: MedallionScope, limit: int, query: str | None = None) -> Steps[list[Medallion]]:
    """The scope's active medallions, newest first; with a `query`, ranked by meaning (best first)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    _check(scope)
    if query is not None and not query.strip():
        raise ValueError("query must be a non-empty text (or None for the newest first)")
    found: list[Medallion] = []
    cursor: str | None = None
    while len(found) < limit:
        size = min(limit - len(found), MAX_PAGE)
        page: Page[Any] = yield (
            call("medallions_list", graph_nodes=scope.graph_nodes, tags=scope.tags, limit=size, cursor=cursor)
            if query is None
            else call(
                "medallions_search",
                query,
                graph_nodes=scope.graph_nodes,
                tags=scope.tags,
                limit=size,
                cursor=cursor,
            )
        )
        found.extend(adopt(medallion) for medallion in page.results)
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def exact_scope_steps(scope: MedallionScope) -> Steps[Medallion | None]:
    """The active medallion of exactly `scope` (never a broader or overlapping scope's), or None."""
    cursor: str | None = None
    while True:
        page: Page[Any] = yield call(
            "medallions_list", graph_nodes=scope.graph_nodes, tags=scope.tags, limit=MAX_PAGE, cursor=cursor
        )
        for medallion in page.results:
            if medallion.scope.scope_key == scope.scope_key:
                return adopt(medallion)
        cursor = page.next_cursor
        if not cursor:
            return None


def _written(fn: Callable[..., Any], *args: Any) -> Steps[Medallion]:
    """What the user's LLM wrote, validated: LLMError if it failed, SchemaValidationError if it is not a
    medallion.v1 document."""
    try:
        written = yield UserCall(fn, args)
    except MedallionError:
        raise
    except Exception as exc:
        raise LLMError(f"the medallion LLM's {getattr(fn, '__name__', 'call')} failed: {exc}") from exc
    return adopt(written)


def llm_session_steps(
    llm: MedallionLLM, scope: MedallionScope, evidence: Evidence, thread_id: str | None
) -> Steps[Medallion]:
    _check(scope)
    existing = yield from exact_scope_steps(scope)
    for _attempt in range(MAX_WRITE_ATTEMPTS):
        if existing is None:
            written = yield from _written(llm.generate, scope, evidence)
            try:
                created = yield call("medallion_create", create_document(written, thread_id))
            except Conflict:  # another session created this scope's medallion meanwhile: update that one
                existing = yield from exact_scope_steps(scope)
                continue
            return adopt(created)
        written = yield from _written(llm.update, existing, evidence)
        try:
            updated = yield call(
                "medallion_update",
                existing.meta.medallion_id,
                update_document(written),
                expected_version=existing.meta.version,
            )
        except PreconditionFailed:  # changed since the LLM read it: merge into the new version
            existing = yield from exact_scope_steps(scope)
            continue
        return adopt(updated)
    raise StoreError(
        f"the medallion of scope {scope.to_dict()} kept changing: gave up after {MAX_WRITE_ATTEMPTS}"
    )


def server_session_steps(
    scope: MedallionScope, evidence: Evidence, thread_id: str | None, timeout: float, wait: float | None
) -> Steps[Medallion]:
    deadline = time.monotonic() + timeout
    server_wait = min(timeout if wait is None else wait, SERVER_WAIT_SECONDS)
    result = yield call("medallion_checkpoint", scope, evidence, thread_id=thread_id, wait=server_wait)
    if result.medallion is not None:
        return adopt(result.medallion)
    job: Job | None = result.job
    if job is None:
        raise StoreError("the server answered neither a medallion nor a job")
    if job.status == "failed":
        raise JobFailed(f"job {job.job_id} failed: {job.error}", details={"job": job.raw})
    job = yield call("job_wait", job.job_id, timeout=max(0.0, deadline - time.monotonic()))
    medallion = yield call("medallion_get", str(job.result["medallion_id"]))
    return adopt(medallion)
