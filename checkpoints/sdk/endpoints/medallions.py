"""The API calls for medallions, jobs, retention, the schema and the health check. Each builder is the one
definition of its request; `MedallionEndpoints` binds them as methods."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from checkpoints.medallion_schema import Evidence, Medallion, MedallionScope
from checkpoints.sdk import flows
from checkpoints.sdk.endpoints.base import (
    Endpoints,
    delete_call,
    get_call,
    params,
    parse_json,
    positive_limit,
    request,
    seg,
)
from checkpoints.sdk.endpoints.threads import _job_body
from checkpoints.sdk.errors import JobFailed
from checkpoints.sdk.jsonvalue import to_json_object
from checkpoints.sdk.models import Job, Page, _ts
from checkpoints.sdk.transport import Call, Response

_DOCUMENT_KEYS = ("meta", "scope", "summary", "decisions", "open_questions", "affordances")


def medallion_from_dict(data: Mapping[str, Any]) -> Medallion:
    """A medallion.v1 document from an API answer, validated by `checkpoints.medallion_schema`. Keys the
    server may add around the document (links, counts) are left out rather than refused."""
    return Medallion.from_dict({key: data[key] for key in _DOCUMENT_KEYS if key in data})


@dataclass
class MedallionRevision:
    """One version of a medallion, with the evidence that produced it."""

    version: int
    status: str
    medallion: Medallion | None
    evidence: dict[str, Any] | None
    model: str = ""
    created_at: datetime | None = None
    job_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MedallionRevision:
        document = data.get("content") or data.get("medallion") or data.get("document")
        return cls(
            version=data.get("version", 0),
            status=data.get("status", ""),
            medallion=medallion_from_dict(document) if isinstance(document, dict) else None,
            evidence=data.get("evidence"),
            model=data.get("model") or "",
            created_at=_ts(data.get("created_at")),
            job_id=str(data["job_id"]) if data.get("job_id") else None,
            raw=data,
        )


@dataclass
class MedallionCheckpointResult:
    """The answer to `medallions/checkpoint/`: the medallion (created or updated) when the job finished in
    time, else the job to wait for."""

    medallion: Medallion | None
    job: Job | None
    created: bool

    @classmethod
    def parse(cls, response: Response) -> MedallionCheckpointResult:
        body = response.body
        if response.status == 202:
            return cls(medallion=None, job=Job.from_dict(_job_body(body)), created=False)
        document = body.get("medallion", body) if isinstance(body, dict) else body
        job = (
            Job.from_dict(body["job"])
            if isinstance(body, dict) and isinstance(body.get("job"), dict)
            else None
        )
        return cls(medallion=medallion_from_dict(document), job=job, created=response.status == 201)


def _medallion(response: Response) -> Medallion:
    return medallion_from_dict(response.body)


def medallion_create(document: Mapping[str, Any]) -> Call[Medallion]:
    """Store an agent-written medallion (scope + content; Conflict if the scope has an active one)."""
    body = to_json_object(document, path="$")
    return Call("POST", "medallions/", _medallion, body=body)


def medallion_checkpoint(
    scope: MedallionScope, evidence: Evidence, *, thread_id: str | None = None, wait: float | None = None
) -> Call[MedallionCheckpointResult]:
    """Create or update the medallion of exactly this scope from the evidence (a job; `wait` seconds)."""
    body: dict[str, Any] = {
        "scope": scope.to_dict(),
        "evidence": to_json_object(evidence.to_dict(), path="$"),
    }
    if thread_id is not None:
        body["thread_id"] = thread_id
    query = params(wait=int(wait) if wait is not None else None)
    return Call("POST", "medallions/checkpoint/", MedallionCheckpointResult.parse, params=query, body=body)


def medallions_list(
    *,
    graph_nodes: Sequence[str] = (),
    tags: Sequence[str] = (),
    status: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[Medallion]]:
    """Medallions whose nodes include `graph_nodes` and whose tags overlap `tags`, newest first."""
    query = params(
        graph_nodes=list(graph_nodes) or None,
        tags=list(tags) or None,
        status=status,
        limit=positive_limit(limit),
        cursor=cursor,
    )
    return get_call("medallions/", lambda r: Page.parse(r.body, medallion_from_dict), query)


def medallions_search(
    query: str,
    *,
    graph_nodes: Sequence[str] = (),
    tags: Sequence[str] = (),
    status: Sequence[str] = (),
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[Medallion]]:
    """Medallions of the scope ranked by meaning against `query`, best first (the server's `score` of each
    is left out of the medallion.v1 document; unembedded medallions come last)."""
    body = {"query": query, "graph_nodes": list(graph_nodes), "tags": list(tags), "status": list(status)}
    query_params = params(limit=positive_limit(limit), cursor=cursor)
    return Call(
        "POST",
        "medallions/search/",
        lambda r: Page.parse(r.body, medallion_from_dict),
        params=query_params,
        body=body,
        idempotent=True,  # a read: safe to send again
    )


def medallion_get(medallion_id: str) -> Call[Medallion]:
    return get_call(f"medallions/{seg(medallion_id)}/", _medallion)


def medallion_update(
    medallion_id: str, changes: Mapping[str, Any], *, expected_version: int | None = None
) -> Call[Medallion]:
    """Change status and/or content: a new revision (PreconditionFailed if `expected_version` is
    stale)."""
    # Not idempotent: every PATCH records a new revision. `expected_version` (If-Match) refuses the change
    # with PreconditionFailed if someone else changed the medallion since that version.
    body = to_json_object(changes, path="$")
    headers = {"If-Match": f'"{expected_version}"'} if expected_version is not None else {}
    return Call("PATCH", f"medallions/{seg(medallion_id)}/", _medallion, body=body, headers=headers)


def medallion_delete(medallion_id: str) -> Call[None]:
    return delete_call(f"medallions/{seg(medallion_id)}/")


def medallion_revisions(
    medallion_id: str, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[MedallionRevision]]:
    """Every version, newest first, with its evidence."""
    return get_call(
        f"medallions/{seg(medallion_id)}/revisions/",
        lambda r: Page.parse(r.body, MedallionRevision.from_dict),
        params(limit=positive_limit(limit), cursor=cursor),
    )


# --- jobs, retention, schema, health ------------------------------------------------------------------------


def jobs_list(
    *, status: str | None = None, kind: str | None = None, limit: int | None = None, cursor: str | None = None
) -> Call[Page[Job]]:
    query = params(status=status, kind=kind, limit=positive_limit(limit), cursor=cursor)
    return get_call("jobs/", lambda r: Page.parse(r.body, Job.from_dict), query)


def job_get(job_id: str) -> Call[Job]:
    return get_call(f"jobs/{seg(job_id)}/", lambda r: Job.from_dict(r.body))


def retention_get() -> Call[dict[str, Any]]:
    return get_call("retention/", parse_json)


def retention_put(policy: Mapping[str, Any]) -> Call[dict[str, Any]]:
    """Change the workspace retention policy (an `admin` key)."""
    return Call("PUT", "retention/", parse_json, body=to_json_object(policy, path="$"), idempotent=True)


def retention_preview() -> Call[dict[str, Any]]:
    """Exactly what the next retention sweep would do."""
    # A dry run: nothing changes, so it is safe to repeat.
    return Call("POST", "retention/preview/", parse_json, body={}, idempotent=True)


def retention_sweep() -> Call[Job]:
    """Sweep the workspace now (a job; poll it with job_wait)."""
    # Not idempotent: each call queues a job.
    return Call("POST", "retention/sweep/", lambda r: Job.from_dict(_job_body(r.body)), body={})


def schema() -> Call[dict[str, Any]]:
    """The OpenAPI 3 document."""
    return get_call("schema/", parse_json, params(format="json"))


def health() -> Call[dict[str, Any]]:
    """`/healthz`: `{"database", "cache", "broker"}`, each "ok" or the problem."""
    # `/healthz` answers 503 with the same report when a component is down: returned, not raised.
    return Call("GET", "/healthz", parse_json, idempotent=True, accept_status=frozenset({503}))


def job_wait(job_id: str, *, timeout: float = 60.0) -> flows.Flow[Job]:
    """Poll until the job finishes: the job if it succeeded, JobFailed if it failed, TimeoutError."""
    deadline = time.monotonic() + timeout
    delay = 0.25
    while True:
        job: Job = yield job_get(job_id)
        if job.finished:
            if job.status == "failed":
                raise JobFailed(f"job {job_id} failed: {job.error}", details={"job": job.raw})
            return job
        if time.monotonic() + delay > deadline:
            raise TimeoutError(f"job {job_id} is still {job.status} after {timeout} s")
        yield flows.Sleep(delay)
        delay = min(delay * 1.5, 2.0)


class MedallionEndpoints(Endpoints):
    medallion_create = request(medallion_create)
    medallion_checkpoint = request(medallion_checkpoint)
    medallions_list = request(medallions_list)
    medallions_search = request(medallions_search)
    medallion_get = request(medallion_get)
    medallion_update = request(medallion_update)
    medallion_delete = request(medallion_delete)
    medallion_revisions = request(medallion_revisions)
    jobs_list = request(jobs_list)
    job_get = request(job_get)
    job_wait = request(job_wait)
    retention_get = request(retention_get)
    retention_put = request(retention_put)
    retention_preview = request(retention_preview)
    retention_sweep = request(retention_sweep)
    schema = request(schema)
    health = request(health)
