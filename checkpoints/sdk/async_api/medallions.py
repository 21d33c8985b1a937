"""Async methods for medallions, jobs, retention, the schema and the health check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checkpoints.medallion_schema import Evidence, Medallion, MedallionScope
from checkpoints.sdk import flows
from checkpoints.sdk.async_api.base import AsyncBase
from checkpoints.sdk.calls import medallions as md
from checkpoints.sdk.calls.medallions import MedallionCheckpointResult, MedallionRevision
from checkpoints.sdk.models import Job, Page


class AsyncMedallionMethods(AsyncBase):
    # --- medallions, jobs, retention -----------------------------------------------------------------------

    async def medallion_create(self, document: Mapping[str, Any]) -> Medallion:
        """Store an agent-written medallion (scope + content; Conflict if the scope has an active one)."""
        return await self.send(md.medallion_create(document))

    async def medallion_checkpoint(
        self,
        scope: MedallionScope,
        evidence: Evidence,
        *,
        thread_id: str | None = None,
        wait: float | None = None,
    ) -> MedallionCheckpointResult:
        """Create or update the medallion of exactly this scope from the evidence (a job; `wait` seconds)."""
        return await self.send(md.medallion_checkpoint(scope, evidence, thread_id=thread_id, wait=wait))

    async def medallions_list(
        self,
        *,
        graph_nodes: Sequence[str] = (),
        tags: Sequence[str] = (),
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[Medallion]:
        """Medallions whose nodes include `graph_nodes` and whose tags overlap `tags`, newest first."""
        return await self.send(
            md.medallions_list(graph_nodes=graph_nodes, tags=tags, status=status, limit=limit, cursor=cursor)
        )

    async def medallion_get(self, medallion_id: str) -> Medallion:
        return await self.send(md.medallion_get(medallion_id))

    async def medallion_update(
        self, medallion_id: str, changes: Mapping[str, Any], *, expected_version: int | None = None
    ) -> Medallion:
        """Change status and/or content: a new revision (PreconditionFailed if `expected_version` is
        stale)."""
        return await self.send(md.medallion_update(medallion_id, changes, expected_version=expected_version))

    async def medallion_delete(self, medallion_id: str) -> None:
        await self.send(md.medallion_delete(medallion_id))

    async def medallion_revisions(
        self, medallion_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[MedallionRevision]:
        """Every version, newest first, with its evidence."""
        return await self.send(md.medallion_revisions(medallion_id, limit=limit, cursor=cursor))

    async def jobs_list(
        self,
        *,
        status: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[Job]:
        return await self.send(md.jobs_list(status=status, kind=kind, limit=limit, cursor=cursor))

    async def job_get(self, job_id: str) -> Job:
        return await self.send(md.job_get(job_id))

    async def job_wait(self, job_id: str, *, timeout: float = 60.0) -> Job:
        """Poll until the job finishes: the job if it succeeded, JobFailed if it failed, TimeoutError."""
        return await self.run(flows.job_wait(job_id, timeout=timeout))

    async def retention_get(self) -> dict[str, Any]:
        return await self.send(md.retention_get())

    async def retention_put(self, policy: Mapping[str, Any]) -> dict[str, Any]:
        """Change the workspace retention policy (an `admin` key)."""
        return await self.send(md.retention_put(policy))

    async def retention_preview(self) -> dict[str, Any]:
        """Exactly what the next retention sweep would do."""
        return await self.send(md.retention_preview())

    async def retention_sweep(self) -> Job:
        """Sweep the workspace now (a job; poll it with job_wait)."""
        return await self.send(md.retention_sweep())

    async def schema(self) -> dict[str, Any]:
        """The OpenAPI 3 document."""
        return await self.send(md.schema())

    async def health(self) -> dict[str, Any]:
        """`/healthz`: `{"database", "cache", "broker"}`, each "ok" or the problem."""
        return await self.send(md.health())
