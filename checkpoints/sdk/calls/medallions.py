"""Request builders for medallions, jobs, retention, the schema and the health check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from checkpoints.medallion_schema import Evidence, Medallion, MedallionScope
from checkpoints.sdk.calls.base import params, parse_json, parse_none, seg
from checkpoints.sdk.calls.threads import _job_body, _limit
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
    body = to_json_object(document, path="$")
    return Call("POST", "medallions/", _medallion, body=body)


def medallion_checkpoint(
    scope: MedallionScope, evidence: Evidence, *, thread_id: str | None = None, wait: float | None = None
) -> Call[MedallionCheckpointResult]:
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
    query = params(
        graph_nodes=list(graph_nodes) or None,
        tags=list(tags) or None,
        status=status,
        limit=_limit(limit),
        cursor=cursor,
    )
    return Call(
        "GET", "medallions/", lambda r: Page.parse(r.body, medallion_from_dict), params=query, idempotent=True
    )


def medallion_get(medallion_id: str) -> Call[Medallion]:
    return Call("GET", f"medallions/{seg(medallion_id)}/", _medallion, idempotent=True)


def medallion_update(
    medallion_id: str, changes: Mapping[str, Any], *, expected_version: int | None = None
) -> Call[Medallion]:
    """Not idempotent: every PATCH records a new revision. `expected_version` (If-Match) refuses the change
    with PreconditionFailed if someone else changed the medallion since that version."""
    body = to_json_object(changes, path="$")
    headers = {"If-Match": f'"{expected_version}"'} if expected_version is not None else {}
    return Call("PATCH", f"medallions/{seg(medallion_id)}/", _medallion, body=body, headers=headers)


def medallion_delete(medallion_id: str) -> Call[None]:
    return Call(
        "DELETE",
        f"medallions/{seg(medallion_id)}/",
        parse_none,
        idempotent=True,
        done_on_retry=frozenset({404}),
    )


def medallion_revisions(
    medallion_id: str, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[MedallionRevision]]:
    return Call(
        "GET",
        f"medallions/{seg(medallion_id)}/revisions/",
        lambda r: Page.parse(r.body, MedallionRevision.from_dict),
        params=params(limit=_limit(limit), cursor=cursor),
        idempotent=True,
    )


# --- jobs, retention, schema, health ------------------------------------------------------------------------


def jobs_list(
    *, status: str | None = None, kind: str | None = None, limit: int | None = None, cursor: str | None = None
) -> Call[Page[Job]]:
    query = params(status=status, kind=kind, limit=_limit(limit), cursor=cursor)
    return Call("GET", "jobs/", lambda r: Page.parse(r.body, Job.from_dict), params=query, idempotent=True)


def job_get(job_id: str) -> Call[Job]:
    return Call("GET", f"jobs/{seg(job_id)}/", lambda r: Job.from_dict(r.body), idempotent=True)


def retention_get() -> Call[dict[str, Any]]:
    return Call("GET", "retention/", parse_json, idempotent=True)


def retention_put(policy: Mapping[str, Any]) -> Call[dict[str, Any]]:
    return Call("PUT", "retention/", parse_json, body=to_json_object(policy, path="$"), idempotent=True)


def retention_preview() -> Call[dict[str, Any]]:
    # A dry run: nothing changes, so it is safe to repeat.
    return Call("POST", "retention/preview/", parse_json, body={}, idempotent=True)


def retention_sweep() -> Call[Job]:
    """Sweep the workspace now, as a job (not idempotent: each call queues a job)."""
    return Call("POST", "retention/sweep/", lambda r: Job.from_dict(_job_body(r.body)), body={})


def schema() -> Call[dict[str, Any]]:
    return Call("GET", "schema/", parse_json, params=params(format="json"), idempotent=True)


def health() -> Call[dict[str, Any]]:
    """`/healthz` answers 503 with the same report when a component is down: returned, not raised."""
    return Call("GET", "/healthz", parse_json, idempotent=True, accept_status=frozenset({503}))
