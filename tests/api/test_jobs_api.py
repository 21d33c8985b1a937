"""`GET jobs/` and `GET jobs/{job_id}/`."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from checkpoints.models import Job, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.jobs import job_claim, job_execute
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

URL = "/api/v1/jobs/"


def make_job(workspace: Workspace, kind: str = Job.Kind.SWEEP, **params: Any) -> Job:
    return Job.objects.create(workspace=workspace, kind=kind, params=params)


def no_messages(job: Job) -> dict[str, Any]:
    raise ValueError("no messages to summarise")


def ids(response: Any) -> list[str]:
    return [job["job_id"] for job in response.json()["results"]]


def test_it_lists_the_workspaces_jobs_newest_first_with_their_outcome(
    read_api: ApiClient, other_workspace: Workspace
) -> None:
    workspace = read_api.workspace
    failed = make_job(workspace, Job.Kind.SUMMARIZE, thread_id="t1")
    job_execute(failed.pk, no_messages)
    done = make_job(
        workspace,
        requested_by={"type": "api_key", "label": "key:abcd1234 (ci)", "user_id": None, "api_key_id": 7},
    )
    job_execute(done.pk, lambda job: {"expired": 3})
    queued = make_job(workspace)
    make_job(other_workspace)

    response = read_api.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert ids(response) == [str(queued.job_id), str(done.job_id), str(failed.job_id)]
    assert body["next"] is None and body["previous"] is None
    done_row = Job.objects.get(pk=done.pk)
    assert body["results"][1] == {
        "job_id": str(done.job_id),
        "kind": "sweep",
        "status": "succeeded",
        "params": {},
        "requested_by": "key:abcd1234 (ci)",
        "result": {"expired": 3},
        "error": None,
        "attempts": 1,
        "created_at": done_row.created_at.isoformat().replace("+00:00", "Z"),
        "started_at": done_row.started_at.isoformat().replace("+00:00", "Z"),  # type: ignore[union-attr]
        "finished_at": done_row.finished_at.isoformat().replace("+00:00", "Z"),  # type: ignore[union-attr]
    }
    assert body["results"][2]["status"] == "failed"
    assert body["results"][2]["error"] == "ValueError: no messages to summarise"
    assert body["results"][2]["params"] == {"thread_id": "t1"}
    assert (
        body["results"][0]["requested_by"] == "system:job:sweep"
        or body["results"][0]["requested_by"] == "job:sweep"
    )


def test_it_filters_by_kind_and_status_repeatably(api: ApiClient) -> None:
    sweep_queued = make_job(api.workspace, Job.Kind.SWEEP)
    summary_running = make_job(api.workspace, Job.Kind.SUMMARIZE)
    job_claim(summary_running.pk)
    summary_queued = make_job(api.workspace, Job.Kind.SUMMARIZE)

    assert ids(api.get(URL, {"kind": "summarize"})) == [
        str(summary_queued.job_id),
        str(summary_running.job_id),
    ]
    assert ids(api.get(URL, {"status": "queued"})) == [str(summary_queued.job_id), str(sweep_queued.job_id)]
    assert ids(api.get(f"{URL}?status=queued&status=running&kind=summarize")) == [
        str(summary_queued.job_id),
        str(summary_running.job_id),
    ]
    assert ids(api.get(URL, {"status": "failed"})) == []


@pytest.mark.parametrize(
    "query", ["status=done", "kind=SWEEP", "kind=", "limit=0", "limit=501", "limit=x", "cursor=%00bad"]
)
def test_it_refuses_bad_query_values_with_a_400(api: ApiClient, query: str) -> None:
    response = api.get(f"{URL}?{query}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "validation_error"


def test_it_pages_with_cursors(api: ApiClient) -> None:
    jobs = [make_job(api.workspace) for _ in range(5)]
    first = api.get(URL, {"limit": 2}).json()
    assert [j["job_id"] for j in first["results"]] == [str(j.job_id) for j in jobs[:2:-1]]
    second = api.get(first["next"]).json()
    assert [j["job_id"] for j in second["results"]] == [str(jobs[2].job_id), str(jobs[1].job_id)]
    third = api.get(second["next"]).json()
    assert [j["job_id"] for j in third["results"]] == [str(jobs[0].job_id)]
    assert third["next"] is None
    back = api.get(third["previous"]).json()
    assert [j["job_id"] for j in back["results"]] == [str(jobs[2].job_id), str(jobs[1].job_id)]


def test_it_lists_in_a_fixed_number_of_queries(api: ApiClient, django_assert_num_queries: Any) -> None:
    api.get(URL)  # the key is loaded (and its last_used_at written) on first use
    for _ in range(3):
        make_job(api.workspace)
    with django_assert_num_queries(1):  # the page (the key and its workspace are remembered)
        assert len(api.get(URL).json()["results"]) == 3
    for _ in range(30):
        make_job(api.workspace)
    with django_assert_num_queries(1):
        assert len(api.get(URL).json()["results"]) == 33


def test_it_shows_one_job_by_its_public_id(api: ApiClient, django_assert_num_queries: Any) -> None:
    job = make_job(api.workspace, requested_by={"type": "system", "label": "nightly"})
    api.get(URL)
    with django_assert_num_queries(1):  # the job (the key is remembered)
        response = api.get(f"{URL}{job.job_id}/")
    assert response.status_code == 200
    assert response.json()["job_id"] == str(job.job_id)
    assert response.json()["status"] == "queued"
    assert response.json()["requested_by"] == "nightly"


def test_it_answers_404_for_another_workspaces_job_and_for_unknown_ids(
    api: ApiClient, other_workspace: Workspace
) -> None:
    theirs = make_job(other_workspace)
    for path in (
        f"{URL}{theirs.job_id}/",
        f"{URL}{uuid.uuid4()}/",
        f"{URL}not-a-uuid/",
        f"{URL}{theirs.pk}/",
    ):
        response = api.get(path)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "not_found"


def test_it_is_read_only(api: ApiClient) -> None:
    job = make_job(api.workspace)
    assert api.post(URL, {"kind": "sweep"}).status_code == 405
    assert api.delete(f"{URL}{job.job_id}/").status_code == 405
    assert api.patch(f"{URL}{job.job_id}/", {"status": "succeeded"}).status_code == 405
    assert Job.objects.get(pk=job.pk).status == Job.Status.QUEUED


def test_it_needs_a_key(client: Any) -> None:
    response = client.get(URL)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_it_renders_a_job_requested_by_the_system_by_its_label(api: ApiClient) -> None:
    job = Job.objects.create(
        workspace=api.workspace,
        kind=Job.Kind.SWEEP,
        params={"requested_by": {"type": "system", "label": "beat", "user_id": None, "api_key_id": None}},
        created_at=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
    )
    body = api.get(f"{URL}{job.job_id}/").json()
    assert body["requested_by"] == Actor.system("beat").label
    assert body["created_at"] == "2026-01-02T03:04:05.000006Z"
