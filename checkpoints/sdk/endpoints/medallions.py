"""The API methods for medallions, jobs, retention, the schema and the health check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checkpoints.medallion_schema import Evidence, Medallion, MedallionScope
from checkpoints.sdk import flows
from checkpoints.sdk.calls import medallions as md
from checkpoints.sdk.calls.medallions import MedallionCheckpointResult, MedallionRevision
from checkpoints.sdk.endpoints.base import Endpoints, endpoint
from checkpoints.sdk.models import Job, Page
from checkpoints.sdk.transport import Call


class MedallionEndpoints(Endpoints):
    # --- medallions, jobs, retention -----------------------------------------------------------------------

    @endpoint
    def medallion_create(self, document: Mapping[str, Any]) -> Call[Medallion]:
        """Store an agent-written medallion (scope + content; Conflict if the scope has an active one)."""
        return md.medallion_create(document)

    @endpoint
    def medallion_checkpoint(
        self,
        scope: MedallionScope,
        evidence: Evidence,
        *,
        thread_id: str | None = None,
        wait: float | None = None,
    ) -> Call[MedallionCheckpointResult]:
        """Create or update the medallion of exactly this scope from the evidence (a job; `wait` seconds)."""
        return md.medallion_checkpoint(scope, evidence, thread_id=thread_id, wait=wait)

    @endpoint
    def medallions_list(
        self,
        *,
        graph_nodes: Sequence[str] = (),
        tags: Sequence[str] = (),
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Call[Page[Medallion]]:
        """Medallions whose nodes include `graph_nodes` and whose tags overlap `tags`, newest first."""
        return md.medallions_list(
            graph_nodes=graph_nodes, tags=tags, status=status, limit=limit, cursor=cursor
        )

    @endpoint
    def medallion_get(self, medallion_id: str) -> Call[Medallion]:
        return md.medallion_get(medallion_id)

    @endpoint
    def medallion_update(
        self, medallion_id: str, changes: Mapping[str, Any], *, expected_version: int | None = None
    ) -> Call[Medallion]:
        """Change status and/or content: a new revision (PreconditionFailed if `expected_version` is
        stale)."""
        return md.medallion_update(medallion_id, changes, expected_version=expected_version)

    @endpoint
    def medallion_delete(self, medallion_id: str) -> Call[None]:
        return md.medallion_delete(medallion_id)

    @endpoint
    def medallion_revisions(
        self, medallion_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Call[Page[MedallionRevision]]:
        """Every version, newest first, with its evidence."""
        return md.medallion_revisions(medallion_id, limit=limit, cursor=cursor)

    @endpoint
    def jobs_list(
        self,
        *,
        status: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Call[Page[Job]]:
        return md.jobs_list(status=status, kind=kind, limit=limit, cursor=cursor)

    @endpoint
    def job_get(self, job_id: str) -> Call[Job]:
        return md.job_get(job_id)

    @endpoint
    def job_wait(self, job_id: str, *, timeout: float = 60.0) -> flows.Flow[Job]:
        """Poll until the job finishes: the job if it succeeded, JobFailed if it failed, TimeoutError."""
        return flows.job_wait(job_id, timeout=timeout)

    @endpoint
    def retention_get(self) -> Call[dict[str, Any]]:
        return md.retention_get()

    @endpoint
    def retention_put(self, policy: Mapping[str, Any]) -> Call[dict[str, Any]]:
        """Change the workspace retention policy (an `admin` key)."""
        return md.retention_put(policy)

    @endpoint
    def retention_preview(self) -> Call[dict[str, Any]]:
        """Exactly what the next retention sweep would do."""
        return md.retention_preview()

    @endpoint
    def retention_sweep(self) -> Call[Job]:
        """Sweep the workspace now (a job; poll it with job_wait)."""
        return md.retention_sweep()

    @endpoint
    def schema(self) -> Call[dict[str, Any]]:
        """The OpenAPI 3 document."""
        return md.schema()

    @endpoint
    def health(self) -> Call[dict[str, Any]]:
        """`/healthz`: `{"database", "cache", "broker"}`, each "ok" or the problem."""
        return md.health()
