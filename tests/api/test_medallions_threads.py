"""`POST threads/{thread_id}/summarize/`: 202 with the job, 400 without a scope or new messages."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.models import Job, Thread
from checkpoints.services.messages import messages_append
from tests.conftest import ApiClient
from tests.medallions.fixtures import eager  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db
SCOPE = {"graph_nodes": ["repo:muse"], "tags": ["support"]}


def thread_with_messages(
    api: ApiClient, thread_id: str = "chat-1", scope: dict[str, Any] | None = None
) -> str:
    Thread.objects.create(
        workspace=api.workspace, thread_id=thread_id, scope=SCOPE if scope is None else scope
    )
    messages_append(
        workspace=api.workspace,
        thread_id=thread_id,
        messages=[
            {"role": "user", "content": "The export button crashes on Safari, please fix it."},
            {
                "role": "assistant",
                "content": "We decided to replace the blob download with a streamed response.",
            },
            {"role": "user", "content": "Do we need to support Safari 15?"},
        ],
    )
    return thread_id


@pytest.mark.usefixtures("eager")
def test_it_answers_202_with_the_job_that_writes_the_thread_scope_medallion(
    api: ApiClient, django_capture_on_commit_callbacks: Any
) -> None:
    thread_id = thread_with_messages(api)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/v1/threads/{thread_id}/summarize/")
    assert response.status_code == 202, response.json()
    job = response.json()
    assert job["kind"] == "summarize" and job["params"] == {"operation": "thread", "thread_id": thread_id}
    assert response["Location"] == f"/api/v1/jobs/{job['job_id']}/"
    done = api.get(f"/api/v1/jobs/{job['job_id']}/").json()
    assert done["status"] == "succeeded" and done["result"]["messages_summarized"] == 3
    found = api.get("/api/v1/medallions/", {"graph_nodes": "repo:muse", "tags": "support"}).json()["results"]
    assert [m["meta"]["medallion_id"] for m in found] == [done["result"]["medallion_id"]]
    medallion = found[0]
    assert medallion["meta"]["source_thread_id"] == thread_id
    assert medallion["decisions"][0]["statement"].startswith("We decided to replace the blob download")
    assert [q["question"] for q in medallion["open_questions"]] == ["Do we need to support Safari 15?"]
    # Nothing new since: a second summary is refused.
    again = api.post(f"/api/v1/threads/{thread_id}/summarize/", {})
    assert again.status_code == 400 and "no new messages" in again.json()["error"]["message"]


def test_it_refuses_a_thread_without_scope(api: ApiClient) -> None:
    thread_id = thread_with_messages(api, scope={"graph_nodes": [], "tags": []})
    response = api.post(f"/api/v1/threads/{thread_id}/summarize/")
    assert response.status_code == 400 and response.json()["error"]["code"] == "validation_error"
    assert "has no scope" in response.json()["error"]["message"]
    assert not Job.objects.exists()


def test_it_is_404_for_missing_and_other_workspaces_threads(api: ApiClient, other_api: ApiClient) -> None:
    thread_id = thread_with_messages(api)
    assert other_api.post(f"/api/v1/threads/{thread_id}/summarize/").status_code == 404
    assert api.post("/api/v1/threads/nope/summarize/").status_code == 404
    assert not Job.objects.exists()


def test_it_needs_write_scope_and_takes_no_body(api: ApiClient, read_api: ApiClient) -> None:
    thread_id = thread_with_messages(api)
    assert read_api.post(f"/api/v1/threads/{thread_id}/summarize/").status_code == 403
    response = api.post(f"/api/v1/threads/{thread_id}/summarize/", {"force": True})
    assert response.status_code == 400 and "takes no body" in response.json()["error"]["message"]
    assert not Job.objects.exists()


@pytest.mark.usefixtures("eager")
def test_appending_messages_summarises_every_n_messages_when_the_workspace_asks(
    api: ApiClient, django_capture_on_commit_callbacks: Any
) -> None:
    api.workspace.auto_summarize_every = 4
    api.workspace.save(update_fields=["auto_summarize_every"])
    Thread.objects.create(workspace=api.workspace, thread_id="auto", scope=SCOPE)
    url = "/api/v1/threads/auto/messages/"
    batch = [{"role": "user", "content": f"Step {i}: we will keep the export streaming."} for i in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(url, {"messages": batch}).status_code == 201
    assert not Job.objects.exists()  # 3 < 4
    with django_capture_on_commit_callbacks(execute=True):
        assert (
            api.post(url, {"messages": [{"role": "assistant", "content": "Done with step 3."}]}).status_code
            == 201
        )
    job = Job.objects.get()
    assert job.status == Job.Status.SUCCEEDED and job.params["requested_by"]["label"] == "auto-summarize"
    assert job.result is not None and job.result["messages_summarized"] == 4
    thread = Thread.objects.get(thread_id="auto")
    assert thread.last_summarized_seq == 4 and thread.medallions.count() == 1
