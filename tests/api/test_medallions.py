"""The medallion endpoints (docs/medallions.md): agent-written medallions, detail, PATCH with revisions,
delete, `checkpoint` as a job (202, or the result with ?wait), and refusal of bad input with the right 4xx."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.medallion_schema import Medallion as MedallionDocument
from checkpoints.models import AuditEvent, Job, Medallion, MedallionRevision, Thread
from tests.conftest import ApiClient
from tests.medallions.fixtures import eager  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db
URL = "/api/v1/medallions/"


def draft(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "scope": {"graph_nodes": ["repo:muse", "module:cli"], "tags": ["project_state"]},
        "summary": {"high_level": "CLI routing done; help command next.", "subsystems": []},
        "decisions": [{"statement": "Use click.", "rationale": "Mature.", "confidence": 0.8}],
        "open_questions": [{"question": "Support Windows?", "priority": "low"}],
        "affordances": {
            "recommended_entry_points": ["muse/cli.py"],
            "avoid_repeating": [],
            "invariants": None,
        },
        "meta": {"model": "agent-written", "knowledge_max_ts": "2026-01-01T00:00:00Z"},
    }
    body.update(overrides)
    return body


def create(api: ApiClient, **overrides: Any) -> dict[str, Any]:
    response = api.post(URL, draft(**overrides))
    assert response.status_code == 201, response.json()
    return response.json()


def test_it_stores_an_agent_written_medallion(api: ApiClient) -> None:
    response = api.post(URL, draft())
    assert response.status_code == 201
    body = response.json()
    document = MedallionDocument.from_dict(body)  # the response is a valid medallion.v1 document
    meta = body["meta"]
    assert response["Location"] == f"{URL}{meta['medallion_id']}/"
    assert meta["version"] == 1 and meta["status"] == "active" and meta["schema_version"] == "medallion.v1"
    assert meta["model"] == "agent-written" and meta["knowledge_max_ts"] == "2026-01-01T00:00:00.000000Z"
    assert body["scope"] == {"graph_nodes": ["module:cli", "repo:muse"], "tags": ["project_state"]}
    assert document.decisions[0].id.startswith("D-") and document.open_questions[0].blocked_on == []
    assert api.get(f"{URL}{meta['medallion_id']}/").json() == body
    assert AuditEvent.objects.filter(action="medallion.create", target_id=meta["medallion_id"]).exists()


def test_it_conflicts_with_an_active_medallion_of_the_same_scope(api: ApiClient) -> None:
    first = create(api)
    again = api.post(
        URL, draft(scope={"graph_nodes": ["module:cli", " repo:muse"], "tags": ["project_state"]})
    )
    assert again.status_code == 409
    assert again.json()["error"] == {
        "code": "conflict",
        "message": again.json()["error"]["message"],
        "details": {"medallion_id": first["meta"]["medallion_id"]},
    }
    # A different (narrower) scope is another medallion.
    create(api, scope={"graph_nodes": ["repo:muse"], "tags": ["project_state"]})
    assert Medallion.objects.count() == 2


def test_patch_makes_a_new_version_and_every_revision_stays_retrievable(api: ApiClient) -> None:
    body = create(api)
    url = f"{URL}{body['meta']['medallion_id']}/"
    decisions = [
        *body["decisions"],
        {"id": "D-2", "statement": "Add --json.", "rationale": "", "confidence": 1},
    ]
    edited = api.patch(url, {"decisions": decisions, "meta": {"model": "agent-2"}}, HTTP_IF_MATCH='"1"')
    assert edited.status_code == 200, edited.json()
    assert edited["ETag"] == '"2"'
    assert edited.json()["meta"]["version"] == 2 and edited.json()["decisions"] == decisions
    assert edited.json()["summary"] == body["summary"]  # what was not sent is unchanged
    stale = api.patch(url, {"status": "stale"})
    assert stale.json()["meta"]["status"] == "stale" and stale.json()["meta"]["version"] == 3
    revisions = api.get(f"{url}revisions/").json()
    assert [r["version"] for r in revisions["results"]] == [3, 2, 1]
    assert [r["medallion"]["meta"]["status"] for r in revisions["results"]] == ["stale", "active", "active"]
    assert revisions["results"][2]["medallion"]["decisions"] == body["decisions"]
    assert revisions["results"][1]["medallion"]["decisions"] == decisions
    assert revisions["results"][0]["requested_by"].startswith("key:")
    assert revisions["results"][0]["evidence"] is None and revisions["results"][0]["job_id"] is None
    # The stale medallion freed the scope; reactivating it now conflicts with the new one.
    create(api)
    assert api.patch(url, {"status": "active"}).status_code == 409


def test_patch_refuses_an_outdated_version_and_is_a_no_op_when_nothing_changes(api: ApiClient) -> None:
    body = create(api)
    url = f"{URL}{body['meta']['medallion_id']}/"
    outdated = api.patch(url, {"status": "stale"}, HTTP_IF_MATCH='"7"')
    assert outdated.status_code == 412 and outdated.json()["error"]["details"] == {"version": 1}
    same = api.patch(url, {"status": "active", "summary": body["summary"]})
    assert same.status_code == 200 and same.json()["meta"]["version"] == 1
    assert MedallionRevision.objects.count() == 1


def test_patch_moving_only_updated_at_records_a_new_version_at_the_servers_time(api: ApiClient) -> None:
    """medallion's store writes the meta it is given, so moving `updated_at` alone moves it. Cairn's clock
    sets the time: a later `meta.updated_at` records a new version now; an equal or earlier one changes
    nothing (a retry, or a writer holding an older copy)."""
    body = create(api)
    url = f"{URL}{body['meta']['medallion_id']}/"
    before = body["meta"]["updated_at"]
    same = api.patch(url, {"meta": {"updated_at": before}})
    assert same.status_code == 200 and same.json()["meta"]["version"] == 1
    earlier = api.patch(url, {"meta": {"updated_at": "2020-01-01T00:00:00Z"}})
    assert earlier.json()["meta"] == body["meta"]
    moved = api.patch(url, {"meta": {"updated_at": "2999-01-01T00:00:00Z"}})
    assert moved.status_code == 200, moved.json()
    meta = moved.json()["meta"]
    assert (
        meta["version"] == 2 and before < meta["updated_at"] < "2999"
    )  # the server's time, not the client's
    assert moved.json()["summary"] == body["summary"] and moved["ETag"] == '"2"'
    assert [r.version for r in MedallionRevision.objects.order_by("version")] == [1, 2]
    bad = api.patch(url, {"meta": {"updated_at": "yesterday"}})
    assert bad.status_code == 400 and bad.json()["error"]["details"] == {"path": "$.meta.updated_at"}


def test_delete_removes_the_medallion_and_its_revisions_with_an_audit_event(api: ApiClient) -> None:
    body = create(api)
    url = f"{URL}{body['meta']['medallion_id']}/"
    assert api.delete(url).status_code == 204
    assert api.get(url).status_code == 404
    assert not MedallionRevision.objects.exists()
    event = AuditEvent.objects.get(action="medallion.delete")
    assert event.details["scope"] == body["scope"]


def test_another_workspaces_medallion_is_404_everywhere(api: ApiClient, other_api: ApiClient) -> None:
    url = f"{URL}{create(api)['meta']['medallion_id']}/"
    for response in (
        other_api.get(url),
        other_api.patch(url, {"status": "stale"}),
        other_api.delete(url),
        other_api.get(f"{url}revisions/"),
    ):
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert Medallion.objects.get().version == 1
    for bad_id in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        assert api.get(f"{URL}{bad_id}/").status_code == 404


def test_a_read_key_cannot_write(read_api: ApiClient, api: ApiClient) -> None:
    url = f"{URL}{create(api)['meta']['medallion_id']}/"
    assert read_api.post(URL, draft(scope={"tags": ["x"]})).status_code == 403
    assert read_api.patch(url, {"status": "stale"}).status_code == 403
    assert read_api.delete(url).status_code == 403
    assert read_api.post(f"{URL}checkpoint/", {}).status_code == 403
    assert read_api.get(url).status_code == 200


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"scope": {"tags": ["x"]}}, "$.summary"),
        (draft(surprise=1), "$.surprise"),
        (draft(meta={"medallion_id": "mine"}), "$.meta.medallion_id"),
        (draft(meta={"version": 5}), "$.meta.version"),
        (draft(scope={"graph_nodes": [" "], "tags": []}), "$.scope"),
        (draft(scope={"graph_nodes": "repo:muse"}), "$.scope.graph_nodes"),
        (draft(scope={"tags": [1]}), "$.scope.tags[0]"),
        (draft(summary={"high_level": "x" * 301}), "$.summary.high_level"),
        (draft(summary={"high_level": "nul \u0000 here"}), "$.summary.high_level"),
        (
            draft(decisions=[{"statement": "s", "rationale": "r", "confidence": "high"}]),
            "$.decisions[0].confidence",
        ),
        (
            draft(decisions=[{"statement": "s", "rationale": "r", "confidence": 1.01}]),
            "$.decisions[0].confidence",
        ),
        (draft(open_questions=[{"question": "q?", "priority": "p0"}]), "$.open_questions[0].priority"),
        (
            draft(
                meta={"knowledge_min_ts": "2026-02-01T00:00:00Z", "knowledge_max_ts": "2026-01-01T00:00:00Z"}
            ),
            "$.meta.knowledge_max_ts",
        ),
        (draft(meta={"knowledge_min_ts": "yesterday"}), "$.meta.knowledge_min_ts"),
        ([draft()], "$"),
    ],
)
def test_it_refuses_invalid_medallions_naming_the_path(api: ApiClient, body: Any, path: str) -> None:
    response = api.post(URL, body)
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "validation_error"
    assert response.json()["error"]["details"] == {"path": path}
    assert not Medallion.objects.exists()


def test_it_refuses_malformed_bodies(api: ApiClient, settings: Any) -> None:
    settings.CAIRN_MAX_JSON_DEPTH = 16
    deep = (
        '{"scope": {"tags": ["x"]}, "summary": {"high_level": "x"}, "decisions": ' + "[" * 40 + "]" * 40 + "}"
    )
    for raw, status in [
        (b'{"scope": ', 400),
        (b"\xff\xfe", 400),
        (deep.encode(), 400),
        (b'{"scope": {}, "scope": {}}', 400),
        (b"", 400),
    ]:
        response = api.generic("POST", URL, raw, content_type="application/json")  # type: ignore[arg-type]
        assert response.status_code == status, (raw[:30], response.content)
        assert response.json()["error"]["code"] == "validation_error"
    settings.CAIRN_MAX_BODY_BYTES = 1000
    huge = api.post(
        URL, draft(summary={"high_level": "x", "subsystems": [{"name": "n" * 2000, "status": "stable"}]})
    )
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "$"),
        ({"scope": {"tags": ["other"]}}, "$.scope"),
        ({"status": "archived"}, "$.status"),
        ({"status": None}, "$.status"),
        ({"meta": {"source_thread_id": "t"}}, "$.meta.source_thread_id"),
        (
            {"decisions": [{"id": "D", "statement": "a", "rationale": "", "confidence": 1}] * 2},
            "$.decisions[1].id",
        ),
    ],
)
def test_patch_refuses_invalid_changes(api: ApiClient, body: dict[str, Any], path: str) -> None:
    url = f"{URL}{create(api)['meta']['medallion_id']}/"
    response = api.patch(url, body)
    assert response.status_code == 400 and response.json()["error"]["details"] == {"path": path}
    assert api.patch(url, {"status": "stale"}, HTTP_IF_MATCH="latest").status_code == 400


@pytest.mark.parametrize("if_match", ["latest", '"\u00b2"', '"\u0661"', '"1_0"', '"-1"'])
def test_patch_refuses_an_if_match_that_is_not_an_ascii_version(api: ApiClient, if_match: str) -> None:
    # "²" passed str.isdigit() and then failed int(): a 500.
    url = f"{URL}{create(api)['meta']['medallion_id']}/"
    response = api.patch(url, {"status": "stale"}, HTTP_IF_MATCH=if_match)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "If-Match must be a medallion version (its ETag)."


def test_detail_and_revisions_pin_their_queries(api: ApiClient, django_assert_num_queries: Any) -> None:
    url = f"{URL}{create(api)['meta']['medallion_id']}/"
    for status in ("stale", "active", "superseded"):
        api.patch(url, {"status": status})
    with django_assert_num_queries(1):  # the medallion (source thread joined); the key is remembered
        api.get(url)
    with django_assert_num_queries(2):  # the medallion, the page of revisions (jobs joined)
        response = api.get(f"{url}revisions/", {"limit": 2})
    assert [r["version"] for r in response.json()["results"]] == [4, 3]
    rest = api.get(response.json()["next"]).json()
    assert [r["version"] for r in rest["results"]] == [2, 1] and rest["next"] is None


# --- POST medallions/checkpoint/ -------------------------------------------------------------------------

CHECKPOINT = {
    "scope": {"graph_nodes": ["repo:muse"], "tags": ["refactor"]},
    "evidence": {
        "session_summary": "Split the CLI into commands.",
        "transcripts": [
            "dev: We decided to use click groups for subcommands.",
            "dev: Should we support plugins?",
        ],
        "artefacts": {"files": ["muse/cli/commands.py"], "commands": ["make test"]},
    },
}


@pytest.mark.usefixtures("eager")
def test_checkpoint_runs_as_a_job_and_answers_202_with_it(
    api: ApiClient, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"{URL}checkpoint/", CHECKPOINT)
    assert response.status_code == 202, response.json()
    job = response.json()
    assert response["Location"] == f"/api/v1/jobs/{job['job_id']}/"
    assert (
        job["kind"] == "summarize"
        and job["status"] == "queued"
        and job["params"]["operation"] == "checkpoint"
    )
    # The job ran once the request's transaction committed.
    done = api.get(f"/api/v1/jobs/{job['job_id']}/").json()
    assert done["status"] == "succeeded" and done["result"]["created"] is True
    medallion = api.get(f"{URL}{done['result']['medallion_id']}/").json()
    assert medallion["decisions"][0]["statement"] == "We decided to use click groups for subcommands."
    assert medallion["open_questions"][0]["question"] == "Should we support plugins?"
    assert medallion["affordances"]["recommended_entry_points"] == ["muse/cli/commands.py", "make test"]
    revision = api.get(f"{URL}{done['result']['medallion_id']}/revisions/").json()["results"][0]
    assert revision["evidence"] == CHECKPOINT["evidence"] and revision["job_id"] == job["job_id"]


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({**CHECKPOINT, "scope": {"graph_nodes": [], "tags": []}}, 400, {"path": "$.scope"}),
        ({**CHECKPOINT, "evidence": {"session_summary": "  "}}, 400, {"path": "$.evidence.session_summary"}),
        (
            {**CHECKPOINT, "evidence": {"session_summary": "x", "transcripts": "one"}},
            400,
            {"path": "$.evidence.transcripts"},
        ),
        (
            {**CHECKPOINT, "evidence": {"session_summary": "x", "artefacts": {"k": "\u0000"}}},
            400,
            {"path": "$.evidence.artefacts.k"},
        ),
        ({**CHECKPOINT, "scope": {"graph_nodes": ["n"] * 257}}, 400, {"path": "$.scope.graph_nodes"}),
        ({**CHECKPOINT, "extra": True}, 400, {"fields": {"extra": ["Unknown field."]}}),
        ({**CHECKPOINT, "scope": ["repo:muse"]}, 400, None),
        ({**CHECKPOINT, "thread_id": "no such thread"}, 400, None),
        ({**CHECKPOINT, "thread_id": "missing"}, 404, None),
    ],
)
def test_checkpoint_refuses_bad_input_before_queueing(
    api: ApiClient, body: dict[str, Any], status: int, detail: dict[str, Any] | None
) -> None:
    response = api.post(f"{URL}checkpoint/", body)
    assert response.status_code == status, response.json()
    if detail is not None:
        assert response.json()["error"]["details"] == detail
    assert not Job.objects.exists()


@pytest.mark.parametrize("wait", ["-1", "31", "nan", "soon", "inf"])
def test_checkpoint_refuses_a_bad_wait(api: ApiClient, wait: str) -> None:
    response = api.post(f"{URL}checkpoint/?wait={wait}", CHECKPOINT)
    assert response.status_code == 400 and response.json()["error"]["details"] == {"wait": wait}
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager")
def test_checkpoint_with_wait_answers_201_created_then_200_updated(api: ApiClient) -> None:
    Thread.objects.create(workspace=api.workspace, thread_id="run-7")
    created = api.post(f"{URL}checkpoint/?wait=5", {**CHECKPOINT, "thread_id": "run-7"})
    assert created.status_code == 201, created.json()
    assert created.json()["meta"]["version"] == 1 and created.json()["meta"]["source_thread_id"] == "run-7"
    assert created["Location"] == f"{URL}{created.json()['meta']['medallion_id']}/"
    job = Job.objects.get(job_id=created["X-Job-Id"])
    assert job.status == Job.Status.SUCCEEDED
    later = {
        **CHECKPOINT,
        "evidence": {"session_summary": "Plugins: yes, we decided to support entry-point plugins."},
    }
    updated = api.post(f"{URL}checkpoint/?wait=5", later)
    assert updated.status_code == 200, updated.json()
    body = updated.json()
    assert (
        body["meta"]["medallion_id"] == created.json()["meta"]["medallion_id"]
        and body["meta"]["version"] == 2
    )
    assert [q["question"] for q in body["open_questions"]] == []  # answered by the new session
    assert len(body["decisions"]) == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager")
def test_checkpoint_with_wait_answers_202_when_the_job_fails(api: ApiClient, settings: Any) -> None:
    settings.CAIRN_LLM = {**settings.CAIRN_LLM, "PROVIDER": "openai", "BASE_URL": "http://127.0.0.1:9/v1"}
    settings.CAIRN_LLM.update(TIMEOUT_SECONDS=0.2, MAX_ATTEMPTS=1)
    response = api.post(f"{URL}checkpoint/?wait=5", CHECKPOINT)
    assert response.status_code == 202
    assert response.json()["status"] == "failed" and "LLMUnavailable" in response.json()["error"]
    assert not Medallion.objects.exists()


def test_checkpoint_without_a_worker_stays_queued(
    api: ApiClient, django_capture_on_commit_callbacks: Any
) -> None:
    # No eager mode and the callbacks not run: nothing executes the job, and wait=0 does not wait.
    response = api.post(f"{URL}checkpoint/?wait=0", CHECKPOINT)
    assert response.status_code == 202 and response.json()["status"] == "queued"


def test_the_openapi_document_describes_the_medallion_endpoints(api: ApiClient) -> None:
    response = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    operations = {
        ("/api/v1/medallions/", "get"): "medallions_list",
        ("/api/v1/medallions/", "post"): "medallions_create",
        ("/api/v1/medallions/checkpoint/", "post"): "medallions_checkpoint",
        ("/api/v1/medallions/{medallion_id}/", "patch"): "medallions_partial_update",
        ("/api/v1/medallions/{medallion_id}/revisions/", "get"): "medallions_revisions_list",
        ("/api/v1/threads/{thread_id}/summarize/", "post"): "threads_summarize",
    }
    for (path, method), operation_id in operations.items():
        assert paths[path][method]["operationId"] == operation_id
    created = paths["/api/v1/medallions/"]["post"]["responses"]["201"]["content"]["application/json"][
        "schema"
    ]
    assert created["properties"]["meta"]["properties"]["knowledge_min_ts"]["nullable"] is True
    statuses = set(paths["/api/v1/medallions/checkpoint/"]["post"]["responses"])
    assert {status for status in statuses if status.startswith("2")} == {"200", "201", "202"}


@pytest.mark.parametrize(
    "evidence",
    [
        '{"session_summary": "lone \\ud800"}',
        '{"session_summary": "x", "artefacts": {"\\udfff": 1}}',
        '{"session_summary": "x", "transcripts": ["nul \\u0000"]}',
    ],
)
def test_checkpoint_refuses_text_postgresql_cannot_store(api: ApiClient, evidence: str) -> None:
    raw = '{"scope": {"tags": ["t"]}, "evidence": ' + evidence + "}"
    response = api.generic("POST", f"{URL}checkpoint/", raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "validation_error"
    assert not Job.objects.exists()
