"""The audit log's CSV and JSON exports: the page's filters, streamed in bounded batches, the workspace's
events only, and CSV cells a spreadsheet cannot run as formulas."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.dashboard import audit_export
from checkpoints.models import Workspace
from checkpoints.services.audit import Actor, audit_record
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db

# session + user + workspace, then one query per batch of EXPORT_BATCH events, and one for the agents of
# each batch that is not empty (none here: the filter matches nothing); the export's own audit event.
EXPORT_QUERIES = 4 + 1
BATCH_QUERIES = 2  # a batch of events and the agents they name


def export(dash: Client, world: World, kind: str, **params: str) -> Any:
    response = dash.get(reverse(f"dashboard:audit-export-{kind}", args=[world.workspace.slug]), params)
    assert response.status_code == 200 and response.streaming
    return response


def body(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


def test_it_exports_the_filtered_log_as_csv(dash: Client, world: World) -> None:
    response = export(dash, world, "csv", action="checkpoint.*")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="audit-acme-')
    rows = list(csv.DictReader(io.StringIO(body(response))))
    assert {row["action"] for row in rows} == {
        "checkpoint.fork",
        "checkpoint.handoff",
        "checkpoint.ttl",
        "checkpoint.expire",
    }
    fork = next(row for row in rows if row["action"] == "checkpoint.fork")
    assert fork["target_id"] == "run-1-fork" and fork["actor_label"] == "test"
    assert json.loads(fork["details"])["source_thread_id"] == "run-1"
    assert fork["created_at"].endswith("Z")


def test_it_defuses_formulas_in_csv_cells(dash: Client, world: World) -> None:
    for label in ('=HYPERLINK("http://evil")', "+1+1", "-2", "@SUM(A1)", "\tx"):
        audit_record(
            workspace=world.workspace,
            actor=Actor(type="user", label=label),
            action="thread.update",
            target_type="thread",
            target_id="=cmd|' /C calc'!A0",
        )
    rows = list(csv.DictReader(io.StringIO(body(export(dash, world, "csv", action="thread.update")))))
    assert sorted(row["actor_label"] for row in rows) == sorted(
        ['\'=HYPERLINK("http://evil")', "'+1+1", "'-2", "'@SUM(A1)", "'\tx"]
    )
    assert {row["target_id"] for row in rows} == {"'=cmd|' /C calc'!A0"}


def test_it_exports_the_filtered_log_as_json(dash: Client, world: World) -> None:
    response = export(dash, world, "json", actor="test", action="medallion.*")
    assert response["Content-Type"] == "application/json"
    document = json.loads(body(response))
    assert document["filters"] == {"actor": "test", "action": "medallion.*"}
    assert [event["action"] for event in document["events"]] == ["medallion.update", "medallion.create"]
    assert document["truncated"] is False
    assert document["events"][0]["target_id"] == str(world.medallion.medallion_id)


def test_it_bounds_the_export_and_says_so(
    dash: Client, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_export, "EXPORT_MAX_ROWS", 3)
    monkeypatch.setattr(audit_export, "EXPORT_BATCH", 2)
    document = json.loads(body(export(dash, world, "json")))
    assert len(document["events"]) == 3 and document["truncated"] is True and document["limit"] == 3
    rows = list(csv.reader(io.StringIO(body(export(dash, world, "csv")))))
    assert len(rows) == 1 + 3
    newest = [event["action"] for event in document["events"]]
    # The same newest events in both formats, after the JSON export's own event (each export is recorded).
    assert [row[3] for row in rows[1:]] == ["audit.export", *newest[:2]]


def test_it_streams_in_batches_with_a_pinned_query_count(
    dash: Client, world: World, monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Callable[..., Any]
) -> None:
    monkeypatch.setattr(audit_export, "EXPORT_BATCH", 5)
    for n in range(12):
        audit_record(
            workspace=world.workspace,
            actor=Actor.system(),
            action="thread.update",
            details={"n": n},
            agents=[f"agent-{n}", "shared"],
        )
    for kind in ("csv", "json"):
        url = reverse(f"dashboard:audit-export-{kind}", args=[world.workspace.slug])
        # 12 events in batches of 5: 3 batches, each read with its agents.
        with django_assert_num_queries(EXPORT_QUERIES - 1 + 3 * BATCH_QUERIES):
            text = body(dash.get(url, {"action": "thread.update"}))
        assert text.count("agent-") == 12 and text.count("shared") == 12
        with django_assert_num_queries(EXPORT_QUERIES):
            body(dash.get(url, {"action": "apikey.*"}))


def test_it_pins_the_json_export_whatever_the_number_of_events(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:audit-export-json", args=[world.workspace.slug])
    with django_assert_num_queries(EXPORT_QUERIES - 1 + BATCH_QUERIES):
        few = json.loads(body(dash.get(url)))["events"]
    for n in range(60):
        audit_record(
            workspace=world.workspace, actor=Actor.system(), action="thread.update", agents=[f"a-{n}"]
        )
    with django_assert_num_queries(EXPORT_QUERIES - 1 + BATCH_QUERIES):  # one batch of up to 500
        many = json.loads(body(dash.get(url)))["events"]
    assert len(many) == len(few) + 60 + 1  # the first export's own event
    assert many[0]["agents"] == ["a-59"]
    assert many[60]["action"] == "audit.export" and many[60]["actor_label"] == "user:alice"


def test_it_exports_nothing_of_another_workspace(
    dash: Client, world: World, other_workspace: Workspace
) -> None:
    audit_record(workspace=other_workspace, actor=Actor.system("other-tenant"), action="thread.delete")
    assert "other-tenant" not in body(export(dash, world, "csv"))
    assert "other-tenant" not in body(export(dash, world, "json"))


def test_it_refuses_bad_filters_with_the_form_errors(dash: Client, world: World) -> None:
    url = reverse("dashboard:audit-export-json", args=[world.workspace.slug])
    response = dash.get(url, {"date_from": "2026-13-45", "actor": "a\x00"})
    assert response.status_code == 400 and not response.streaming
    assert b"field-error" in response.content


def test_the_page_links_both_exports_with_its_filters(dash: Client, world: World) -> None:
    page = dash.get(reverse("dashboard:audit", args=[world.workspace.slug]), {"action": "thread.*"})
    html = page.content.decode()
    assert 'href="/dashboard/w/acme/audit/export.csv?action=thread.%2A"' in html
    assert 'href="/dashboard/w/acme/audit/export.json?action=thread.%2A"' in html
