"""checkpoint_session semantics: create-or-update by exact normalised scope, a revision for every version,
never touching another scope's medallion, atomic under concurrency."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from checkpoints.exceptions import ValidationFailed
from checkpoints.llm.extractive import ExtractiveProvider
from checkpoints.medallion_schema import (
    Evidence,
    MedallionContent,
    MedallionScope,
)
from checkpoints.medallion_schema import (
    Medallion as MedallionDocument,
)
from checkpoints.models import Job, Medallion, MedallionRevision, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.jobs import job_execute
from checkpoints.services.medallion_reads import medallion_document
from checkpoints.services.medallion_store import medallion_upsert
from checkpoints.services.medallions import (
    medallion_checkpoint,
    medallion_checkpoint_submit,
    medallion_update,
)
from tests.concurrency.runner import run_concurrently
from tests.factories import WorkspaceFactory
from tests.medallions.fixtures import checkpoint_job, result_of

pytestmark = pytest.mark.django_db
ACTOR = Actor.system("test")


def evidence(text: str, *transcripts: str) -> dict[str, Any]:
    return {"session_summary": text, "transcripts": list(transcripts), "artefacts": {}}


def test_it_creates_then_updates_the_medallion_of_an_exact_scope(workspace: Workspace) -> None:
    scope = {"graph_nodes": ["repo:muse", "module:cli"], "tags": ["refactor"]}
    first = checkpoint_job(
        workspace, scope, evidence("Started the CLI.", "dev: We decided to use click for the CLI.")
    )
    assert (
        first.status == Job.Status.SUCCEEDED
        and result_of(first)["created"] is True
        and result_of(first)["version"] == 1
    )
    # The same scope spelled differently is the same scope.
    messy = {"graph_nodes": [" module:cli", "repo:muse", "repo:muse"], "tags": ["refactor", " "]}
    second = checkpoint_job(
        workspace, messy, evidence("Added errors.", "dev: We will wrap errors in CliError.")
    )
    assert second.result == {**result_of(first), "version": 2, "created": False}
    medallion = Medallion.objects.get()
    assert medallion.version == 2 and medallion.model == "cairn-extractive-1"
    statements = [d["statement"] for d in medallion.decisions]
    assert statements == ["We decided to use click for the CLI.", "We will wrap errors in CliError."]
    revisions = list(medallion.revisions.order_by("version"))
    assert [(r.version, r.job_id) for r in revisions] == [(1, first.pk), (2, second.pk)]
    assert [(r.evidence or {}).get("session_summary") for r in revisions] == [
        "Started the CLI.",
        "Added errors.",
    ]
    # Each revision holds the whole document of its version.
    assert [d["statement"] for d in revisions[0].content["decisions"]] == statements[:1]
    assert MedallionDocument.from_dict(revisions[1].content).meta.version == 2


def test_it_never_touches_a_narrower_or_overlapping_scope(workspace: Workspace) -> None:
    scopes = {
        "wide": {"graph_nodes": ["repo:muse", "module:cli"], "tags": ["refactor"]},
        "narrower": {"graph_nodes": ["repo:muse"], "tags": ["refactor"]},
        "overlapping": {"graph_nodes": ["repo:muse", "module:cli"], "tags": ["refactor", "perf"]},
    }
    for name, scope in scopes.items():
        checkpoint_job(workspace, scope, evidence(f"{name} session."))
    before = {m.pk: (m.version, m.high_level) for m in Medallion.objects.all()}
    checkpoint_job(workspace, scopes["wide"], evidence("Second wide session."))
    after = {m.pk: (m.version, m.high_level) for m in Medallion.objects.all()}
    changed = [pk for pk in after if after[pk] != before[pk]]
    assert len(after) == 3 and len(changed) == 1
    wide = Medallion.objects.get(pk=changed[0])
    assert wide.graph_nodes == ["module:cli", "repo:muse"] and wide.tags == ["refactor"] and wide.version == 2


def test_a_stale_medallion_frees_its_scope_for_a_new_one(workspace: Workspace) -> None:
    scope = {"graph_nodes": ["repo:muse"], "tags": []}
    first = checkpoint_job(workspace, scope, evidence("One."))
    old = Medallion.objects.get()
    medallion_update(medallion=old, changes={"status": "stale"}, actor=ACTOR)
    second = checkpoint_job(workspace, scope, evidence("Two."))
    assert (
        result_of(second)["created"] is True
        and result_of(second)["medallion_id"] != result_of(first)["medallion_id"]
    )
    old.refresh_from_db()
    assert old.status == "stale" and old.version == 2
    assert Medallion.objects.filter(status="active").count() == 1


def test_it_records_the_source_thread_and_widens_the_knowledge_window(workspace: Workspace) -> None:
    Thread.objects.create(workspace=workspace, thread_id="run-1")
    scope = {"graph_nodes": [], "tags": ["t"]}
    first = checkpoint_job(workspace, scope, evidence("One."), thread_id="run-1")
    second = checkpoint_job(workspace, scope, evidence("Two."))
    medallion = Medallion.objects.get()
    assert medallion.source_thread_public_id == "run-1"  # kept when an update names no thread
    assert medallion.knowledge_min_ts == first.created_at and medallion.knowledge_max_ts == second.created_at


def test_the_longest_scope_items_still_make_a_valid_medallion(workspace: Workspace) -> None:
    node = "module:" + "x" * 248  # 255 characters: the longest a scope item may be
    job = checkpoint_job(workspace, {"graph_nodes": [node], "tags": []}, evidence(f"Worked on {node[-20:]}."))
    assert job.status == Job.Status.SUCCEEDED, job.error
    medallion = Medallion.objects.for_api().get()
    document = medallion_document(medallion)  # parses the stored content again
    assert document.summary.subsystems[0].name.startswith("module:xxx")
    assert len(document.summary.subsystems[0].name) <= 200


def test_the_job_is_idempotent_when_redelivered(workspace: Workspace) -> None:
    job = checkpoint_job(workspace, {"tags": ["t"], "graph_nodes": []}, evidence("One."))
    # A redelivery after a crash between the write and the job's success (the job still "running").
    Job.objects.filter(pk=job.pk).update(status=Job.Status.QUEUED)
    again = job_execute(job.pk, medallion_checkpoint)
    assert again is not None and again.result == result_of(job)
    assert MedallionRevision.objects.count() == 1


def test_submission_validates_before_queueing(workspace: Workspace) -> None:
    with pytest.raises(ValidationFailed) as empty:
        medallion_checkpoint_submit(
            workspace=workspace, scope={"graph_nodes": [" "]}, evidence=evidence("x"), actor=ACTOR
        )
    assert empty.value.details == {"path": "$.scope"}
    with pytest.raises(ValidationFailed) as bad:
        medallion_checkpoint_submit(
            workspace=workspace, scope={"tags": ["t"]}, evidence={"session_summary": ""}, actor=ACTOR
        )
    assert bad.value.details == {"path": "$.session_summary"}
    assert Job.objects.count() == 0


def test_submission_runs_the_celery_task(
    workspace: Workspace, eager: None, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        job = medallion_checkpoint_submit(
            workspace=workspace, scope={"tags": ["t"]}, evidence=evidence("Shipped it."), actor=ACTOR
        )
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.params["requested_by"]["label"] == "test"
    assert MedallionRevision.objects.get().actor_label == "test"


class SlowProvider(ExtractiveProvider):
    """The extractive provider, but every first-generation call waits until all callers are inside it, so all
    of them decide "no medallion yet" before any writes: the worst case for duplicates."""

    def __init__(self, barrier: threading.Barrier) -> None:
        self.barrier = barrier

    def generate(self, scope: MedallionScope, evidence: Evidence) -> MedallionContent:
        self.barrier.wait(timeout=30)
        return super().generate(scope, evidence)


@pytest.fixture
def concurrent_workspace(transactional_db: None) -> Iterator[Workspace]:
    yield WorkspaceFactory.create(slug="race")


@pytest.mark.postgres
def test_ten_concurrent_checkpoints_of_a_new_scope_make_one_medallion_with_ten_revisions(
    concurrent_workspace: Workspace,
) -> None:
    callers = 10
    barrier = threading.Barrier(callers)
    scope = MedallionScope(graph_nodes=["repo:race"], tags=["concurrency"])
    created: list[bool] = []

    def run(i: int) -> None:
        outcome = medallion_upsert(
            workspace=concurrent_workspace,
            scope=scope,
            evidence=Evidence(
                session_summary=f"Session {i}.", transcripts=[f"dev: We decided to adopt tool{i}."]
            ),
            provider=SlowProvider(barrier),
            actor_label=f"caller-{i}",
        )
        created.append(outcome.created)

    errors = run_concurrently([partial(run, i) for i in range(callers)], timeout=120)
    assert not errors, errors
    assert sorted(created) == [False] * 9 + [True]
    medallion = Medallion.objects.get(workspace=concurrent_workspace)
    assert medallion.version == callers
    revisions = list(medallion.revisions.order_by("version"))
    assert [r.version for r in revisions] == list(range(1, callers + 1))
    assert sorted(r.actor_label for r in revisions) == sorted(f"caller-{i}" for i in range(callers))
    # Every caller's evidence made it in: the decisions of all ten sessions accumulated.
    assert sorted(d["statement"] for d in medallion.decisions) == sorted(
        f"We decided to adopt tool{i}." for i in range(callers)
    )


@pytest.mark.postgres
@pytest.mark.usefixtures("eager")
def test_ten_concurrent_checkpoint_requests_make_one_medallion(
    concurrent_workspace: Workspace, make_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same race through the API: ten POST medallions/checkpoint/?wait=30, each job run in its request."""
    callers = 10
    barrier = threading.Barrier(callers)
    monkeypatch.setattr("checkpoints.services.medallions.get_provider", lambda: SlowProvider(barrier))
    clients = [make_client(concurrent_workspace) for _ in range(callers)]
    statuses: list[int] = []

    def post(i: int) -> None:
        body = {
            "scope": {"graph_nodes": ["repo:api-race"], "tags": []},
            "evidence": {
                "session_summary": f"Request {i}.",
                "transcripts": [f"dev: We decided to ship v{i}."],
            },
        }
        statuses.append(clients[i].post("/api/v1/medallions/checkpoint/?wait=30", body).status_code)

    errors = run_concurrently([partial(post, i) for i in range(callers)], timeout=120)
    assert not errors, errors
    assert sorted(statuses) == [200] * 9 + [201]
    medallion = Medallion.objects.get(workspace=concurrent_workspace)
    assert medallion.version == callers and medallion.revisions.count() == callers
    assert len(medallion.decisions) == callers
