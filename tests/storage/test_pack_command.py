"""`manage.py pack_checkpoints`: checkpoints stored whole before packing existed are packed in resumable
batches, restore to the same bytes, and a dry run reports the same numbers without writing
(docs/storage.md)."""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from checkpoints.integrity import canonical_json
from checkpoints.models import AuditEvent, Checkpoint, Job, StoredValue
from checkpoints.packing import PACK_MIN, is_packed
from checkpoints.services import checkpoint_packing
from checkpoints.services.checkpoint_packing import checkpoints_pack
from checkpoints.services.checkpoints import checkpoint_verify
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


def message(n: int) -> dict[str, Any]:
    """About 300 characters once encoded."""
    return {"role": "user" if n % 2 else "assistant", "content": f"message {n}: " + "word " * 55, "n": n}


def big_state(step: int) -> dict[str, Any]:
    return {"messages": [message(n) for n in range(60)], "step": step}


@dataclass(frozen=True)
class Saved:
    api: ApiClient
    thread: str
    checkpoint_id: str

    def restore(self) -> bytes:
        response = self.api.get(f"/api/v1/threads/{self.thread}/checkpoints/{self.checkpoint_id}/")
        assert response.status_code == 200, response.content
        return bytes(response.content)


def save(api: ApiClient, thread: str, state: Any, context: Any = None) -> Saved:
    body = {"agent_id": "a", "state": state, **({"context": context} if context is not None else {})}
    response = api.post(f"/api/v1/threads/{thread}/checkpoints/", body)
    assert response.status_code == 201, response.content
    return Saved(api, thread, response.json()["checkpoint_id"])


def stored_rows() -> list[tuple[Any, ...]]:
    """Every checkpoint's stored text, as the table holds it (not filled in)."""
    return list(Checkpoint.objects.order_by("pk").values_list("pk", "state", "context"))


def make_old_data() -> None:
    """Turn every row back into what a save before packing stored: the whole canonical text, no parts."""
    for checkpoint in Checkpoint.objects.all():
        Checkpoint.objects.filter(pk=checkpoint.pk).update(state=checkpoint.state, context=checkpoint.context)
    StoredValue.objects.all().delete()
    assert not any(is_packed(text) for _, *texts in stored_rows() for text in texts)


@pytest.fixture
def old_data(api: ApiClient, other_api: ApiClient) -> dict[str, bytes]:
    """Four large checkpoints sharing their messages in acme (one with a large context too), one small one,
    one large in globex; all stored whole. Returns each checkpoint's restore response, keyed by id."""
    saved = [
        save(api, "chat", big_state(1)),
        save(api, "chat", big_state(2)),
        save(api, "other", big_state(3)),
        save(api, "both", big_state(4), context={"notes": [message(n) for n in range(20)]}),
        save(api, "small", {"step": 1}),
        save(other_api, "chat", big_state(1)),
    ]
    make_old_data()
    return {each.checkpoint_id: each.restore() for each in saved}


def run(*args: str) -> tuple[dict[str, int], list[str]]:
    """Run the command; returns its report lines as numbers, and every line."""
    out = StringIO()
    call_command("pack_checkpoints", *args, stdout=out)
    lines = out.getvalue().splitlines()
    report = {
        name: int(value.split()[0])
        for name, _, value in (line.partition(": ") for line in lines if not line.startswith("batch "))
        if value and value.split()[0].isdigit()
    }
    return report, lines


def restores(old_data: dict[str, bytes], api: ApiClient, other_api: ApiClient) -> dict[str, bytes]:
    """Every checkpoint's restore response now, through the API of its workspace."""
    stored = {
        checkpoint.checkpoint_id: checkpoint for checkpoint in Checkpoint.objects.select_related("thread")
    }
    result = {}
    for checkpoint_id in old_data:
        checkpoint = stored[checkpoint_id]
        client = api if checkpoint.workspace_id == api.workspace.pk else other_api
        result[checkpoint_id] = Saved(client, checkpoint.thread.thread_id, checkpoint_id).restore()
    return result


def large_whole_bytes() -> int:
    return sum(
        len(text.encode())
        for _, *texts in stored_rows()
        for text in texts
        if text is not None and len(text) >= PACK_MIN
    )


def test_a_dry_run_reports_what_the_real_run_then_does_and_writes_nothing(
    old_data: dict[str, bytes], api: ApiClient, other_api: ApiClient
) -> None:
    before = stored_rows()
    expected_before = large_whole_bytes()

    dry, lines = run("--dry-run", "--batch-size", "2")
    assert "dry run: nothing was written" in lines
    assert stored_rows() == before
    assert not StoredValue.objects.exists()
    assert not AuditEvent.objects.filter(action="storage.pack").exists()
    assert (dry["examined"], dry["would_convert"], dry["bytes_before"]) == (5, 5, expected_before)
    # Four acme states share their messages: stored once, as globex's are (parts are per workspace).
    assert 0 < dry["bytes_after"] < dry["bytes_before"] / 2
    assert dry["bytes_saved"] == dry["bytes_before"] - dry["bytes_after"]

    real, _ = run("--batch-size", "2")
    assert real == {("converted" if name == "would_convert" else name): n for name, n in dry.items()}
    # After: the packed texts plus every part now stored (there were none before), each counted once.
    packed_bytes = sum(len(text.encode()) for _, *texts in stored_rows() for text in texts if is_packed(text))
    parts_bytes = sum(StoredValue.objects.values_list("size_bytes", flat=True))
    assert real["bytes_after"] == packed_bytes + parts_bytes


def test_it_packs_old_rows_without_changing_what_they_restore_to(
    old_data: dict[str, bytes], api: ApiClient, other_api: ApiClient
) -> None:
    report, lines = run()
    assert report["converted"] == 5
    assert lines[0].startswith("batch 1: up to pk ")
    rows = {pk: (state, context) for pk, state, context in stored_rows()}
    packed_columns = sum(is_packed(text) for texts in rows.values() for text in texts)
    assert packed_columns == 6  # five states and one context; the small checkpoint stays whole
    small = Checkpoint.objects.get(thread__thread_id="small")
    assert rows[small.pk] == (canonical_json({"step": 1}), "{}")
    assert restores(old_data, api, other_api) == old_data
    assert all(checkpoint_verify(checkpoint) for checkpoint in Checkpoint.objects.all())
    call_command("verify_integrity", stdout=StringIO())  # SystemExit(1) on any mismatch


def test_a_second_run_converts_nothing(old_data: dict[str, bytes]) -> None:
    run()
    after_first = (stored_rows(), StoredValue.objects.count())
    again, _ = run()
    assert (again["examined"], again["converted"], again["bytes_before"], again["bytes_after"]) == (
        0,
        0,
        0,
        0,
    )
    assert (stored_rows(), StoredValue.objects.count()) == after_first


def test_an_interrupted_run_is_finished_by_the_next(
    old_data: dict[str, bytes], api: ApiClient, other_api: ApiClient
) -> None:
    first = checkpoints_pack(batch_size=1, max_batches=1)
    assert (first["converted"], first["complete"]) == (1, False)
    assert sum(is_packed(state) for _, state, _ in stored_rows()) == 1
    assert restores(old_data, api, other_api) == old_data

    rest, _ = run()
    assert rest["converted"] == 4
    assert sum(is_packed(state) for _, state, _ in stored_rows()) == 5
    assert restores(old_data, api, other_api) == old_data
    assert all(checkpoint_verify(checkpoint) for checkpoint in Checkpoint.objects.all())


def test_it_leaves_a_row_alone_that_changed_while_it_was_packed(
    old_data: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = Checkpoint.objects.get(thread__thread_id="other")
    plan = checkpoint_packing._plan

    def tombstoned_meanwhile(row: Any) -> Any:
        result = plan(row)
        if row[0] == victim.pk:
            Checkpoint.objects.filter(pk=victim.pk).update(
                expired_at=timezone.now(), state=None, context=None, metadata=None
            )
        return result

    monkeypatch.setattr(checkpoint_packing, "_plan", tombstoned_meanwhile)
    report, _ = run()
    assert report["converted"] == 4
    assert Checkpoint.objects.filter(pk=victim.pk).values_list("state", flat=True).get() is None


def test_it_records_one_audit_event_per_workspace(old_data: dict[str, bytes], api: ApiClient) -> None:
    run("--batch-size", "1")
    events = {event.workspace.slug: event for event in AuditEvent.objects.filter(action="storage.pack")}
    assert sorted(events) == ["acme", "globex"]
    assert (events["acme"].actor_label, events["acme"].target_id) == ("manage.py pack_checkpoints", "acme")
    details = events["acme"].details
    assert (details["converted"], details["complete"]) == (4, True)
    assert details["bytes_after"] < details["bytes_before"]


def test_it_packs_one_workspace_when_asked(old_data: dict[str, bytes], other_api: ApiClient) -> None:
    report, _ = run("--workspace", "globex")
    assert report["converted"] == 1
    packed = [pk for pk, state, _ in stored_rows() if is_packed(state)]
    assert [Checkpoint.objects.get(pk=pk).workspace.slug for pk in packed] == ["globex"]
    assert set(StoredValue.objects.values_list("workspace__slug", flat=True)) == {"globex"}


def test_it_refuses_an_unknown_workspace_or_batch_size() -> None:
    with pytest.raises(CommandError, match="No workspace 'nope'"):
        run("--workspace", "nope")
    with pytest.raises(CommandError, match="--batch-size must be at least 1"):
        run("--batch-size", "0")


@pytest.mark.usefixtures("eager_celery")
def test_in_the_background_it_queues_one_job_per_workspace_that_converts_it(
    old_data: dict[str, bytes], api: ApiClient, other_api: ApiClient, django_capture_on_commit_callbacks: Any
) -> None:
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):  # each job is published once its row commits
        call_command("pack_checkpoints", "--background", stdout=out)
    assert len(out.getvalue().splitlines()) == 2  # "queued job <id> for workspace <slug>", acme and globex
    jobs = {job.workspace.slug: job for job in Job.objects.filter(kind=Job.Kind.PACK)}
    assert {job.status for job in jobs.values()} == {Job.Status.SUCCEEDED}
    converted = {slug: (job.result or {}).get("converted") for slug, job in jobs.items()}
    assert converted == {api.workspace.slug: 4, other_api.workspace.slug: 1}
    assert restores(old_data, api, other_api) == old_data
    with pytest.raises(CommandError, match="--dry-run"):
        call_command("pack_checkpoints", "--background", "--dry-run", stdout=StringIO())
