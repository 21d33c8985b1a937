"""Packed checkpoints through the API: stored once per workspace, read back whole, tampering caught, and
parts collected only when nothing names them (docs/storage.md)."""

from __future__ import annotations

import base64
import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from checkpoints.integrity import canonical_json
from checkpoints.models import Checkpoint, StoredValue, Workspace
from checkpoints.packing import DIGEST_BYTES, digests, is_packed, references
from checkpoints.services.checkpoints import checkpoints_tombstone
from checkpoints.storage.stored_values import values_collect
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


def message(n: int) -> dict[str, Any]:
    return {"role": "user" if n % 2 else "assistant", "content": f"message {n}: " + "word " * 60, "n": n}


def chat(turns: int) -> dict[str, Any]:
    return {"messages": [message(n) for n in range(turns)], "step": turns}


def save(api: ApiClient, state: dict[str, Any], thread: str = "t", **extra: Any) -> dict[str, Any]:
    response = api.post(f"/api/v1/threads/{thread}/checkpoints/", {"agent_id": "a", "state": state, **extra})
    assert response.status_code == 201, response.content
    body: dict[str, Any] = response.json()
    return body


def stored_state(checkpoint_id: str) -> str:
    text = Checkpoint.objects.filter(checkpoint_id=checkpoint_id).values_list("state", flat=True).get()
    assert text is not None
    return text


def stored_state_in(thread: str, checkpoint_id: str) -> str:
    rows = Checkpoint.objects.filter(thread__thread_id=thread, checkpoint_id=checkpoint_id)
    text = rows.values_list("state", flat=True).get()
    assert text is not None and text.startswith("#")
    return text


def restore(api: ApiClient, checkpoint_id: str, thread: str = "t") -> Any:
    return api.get(f"/api/v1/threads/{thread}/checkpoints/{checkpoint_id}/")


def test_a_large_state_is_stored_packed_and_every_read_gives_it_back_whole(api: ApiClient) -> None:
    first = save(api, chat(40))
    second = save(api, chat(41))
    assert is_packed(stored_state(first["checkpoint_id"]))
    assert len(stored_state(second["checkpoint_id"])) < len(canonical_json(chat(41))) / 5
    assert restore(api, first["checkpoint_id"]).json()["state"] == chat(40)
    assert api.get("/api/v1/threads/t/state/").json()["state"] == chat(41)
    timeline = api.get("/api/v1/threads/t/checkpoints/?include_state=true").json()["results"]
    assert [c["state"] for c in timeline] == [chat(41), chat(40)]
    diff = api.get(f"/api/v1/threads/t/checkpoints/{second['checkpoint_id']}/diff/").json()
    assert sorted(diff["patch"], key=lambda op: op["path"]) == [
        {"op": "add", "path": "/state/messages/40", "value": message(40)},
        {"op": "replace", "path": "/state/step", "value": 41},
    ]


def test_appending_to_a_long_list_stores_only_the_new_element(api: ApiClient) -> None:
    save(api, chat(40))
    before = set(StoredValue.objects.values_list("body", flat=True))
    save(api, chat(41))
    new = set(StoredValue.objects.values_list("body", flat=True)) - before
    assert new == {canonical_json(message(40))}


def test_a_small_state_is_stored_whole(api: ApiClient) -> None:
    created = save(api, chat(3))
    assert stored_state(created["checkpoint_id"]) == canonical_json(chat(3))
    assert not StoredValue.objects.exists()


def test_parts_are_never_shared_across_workspaces(
    api: ApiClient, other_api: ApiClient, workspace: Workspace, other_workspace: Workspace
) -> None:
    mine, theirs = save(api, chat(40)), save(other_api, chat(40))
    for space in (workspace, other_workspace):
        named = digests([Checkpoint.objects.filter(workspace=space).values_list("state", flat=True).get()])
        stored = {
            bytes(d) for d in StoredValue.objects.filter(workspace=space).values_list("digest", flat=True)
        }
        assert named == stored
    assert restore(api, mine["checkpoint_id"]).json()["state"] == chat(40)
    assert restore(other_api, theirs["checkpoint_id"]).json()["state"] == chat(40)


def test_tampering_with_a_shared_part_is_caught_on_every_checkpoint_naming_it(api: ApiClient) -> None:
    ids = [save(api, chat(40))["checkpoint_id"], save(api, chat(41))["checkpoint_id"]]
    shared = digests([stored_state(ids[0])]) & digests([stored_state(ids[1])])
    assert shared
    part = StoredValue.objects.get(digest=next(iter(shared)))
    part.body = part.body.replace("word", "w0rd", 1)
    part.save()
    for checkpoint_id in ids:
        response = restore(api, checkpoint_id)
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "checksum_mismatch"


def test_a_missing_part_is_refused_as_altered_not_a_server_error(api: ApiClient) -> None:
    created = save(api, chat(40))
    StoredValue.objects.filter(digest=next(iter(digests([stored_state(created["checkpoint_id"])])))).delete()
    response = restore(api, created["checkpoint_id"])
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "checksum_mismatch"


@pytest.mark.parametrize(
    "header", ["#0:not-a-digest", "#x:" + "A" * 43, "#0:" + "A" * 43 + ",", "#0:" + "A" * 42 + "!", "#"]
)
def test_a_packed_header_altered_by_hand_is_refused_as_altered_not_a_server_error(
    api: ApiClient, header: str
) -> None:
    created = save(api, chat(40))
    skeleton = stored_state(created["checkpoint_id"]).split("\n", 1)[1]
    Checkpoint.objects.filter(checkpoint_id=created["checkpoint_id"]).update(state=f"{header}\n{skeleton}")
    response = restore(api, created["checkpoint_id"])
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "checksum_mismatch"


def test_a_retry_of_a_packed_save_is_compared_whole(api: ApiClient) -> None:
    created = save(api, chat(40), checkpoint_id="c1")
    retry = api.post(
        "/api/v1/threads/t/checkpoints/", {"agent_id": "a", "state": chat(40), "checkpoint_id": "c1"}
    )
    assert retry.status_code == 200 and retry.json()["checksum"] == created["checksum"]
    changed = api.post(
        "/api/v1/threads/t/checkpoints/", {"agent_id": "a", "state": chat(41), "checkpoint_id": "c1"}
    )
    assert changed.status_code == 409
    assert changed.json()["error"]["details"]["differing_fields"] == ["state"]


def test_a_copy_of_a_packed_thread_restores_whole(api: ApiClient) -> None:
    created = save(api, chat(40))
    copied = api.post("/api/v1/threads/t/copy/", {"thread_id": "t2"})
    assert copied.status_code == 201, copied.content
    assert restore(api, created["checkpoint_id"], thread="t2").json()["state"] == chat(40)
    copy = Checkpoint.objects.filter(thread__thread_id="t2").values_list("state", flat=True).get()
    assert copy == stored_state_in("t", created["checkpoint_id"])  # packed too, naming the same parts


def collect_after_grace(workspace: Workspace) -> dict[str, int]:
    later = timezone.now() + timedelta(seconds=settings.CAIRN_VALUE_GRACE_SECONDS + 1)
    return values_collect(workspace=workspace, now=later)


def test_the_collector_deletes_only_parts_nothing_names(api: ApiClient, workspace: Workspace) -> None:
    kept = save(api, chat(40), thread="kept")["checkpoint_id"]
    save(api, chat(45), thread="gone")
    named_by_kept = digests([stored_state(kept)])
    assert api.delete("/api/v1/threads/gone/").status_code == 204
    total = StoredValue.objects.count()
    # Within the grace period nothing goes, named or not.
    assert values_collect(workspace=workspace) == {"values": 0, "bytes": 0}
    freed = collect_after_grace(workspace)
    remaining = {bytes(d) for d in StoredValue.objects.values_list("digest", flat=True)}
    assert remaining == named_by_kept
    assert freed["values"] == total - len(remaining) > 0
    assert restore(api, kept, thread="kept").json()["state"] == chat(40)


def test_an_expired_checkpoint_leaves_its_parts_to_the_collector(
    api: ApiClient, workspace: Workspace
) -> None:
    created = save(api, chat(40))
    checkpoints_tombstone(
        pks=[Checkpoint.objects.get(checkpoint_id=created["checkpoint_id"]).pk], now=timezone.now()
    )
    assert collect_after_grace(workspace)["values"] > 0
    assert not StoredValue.objects.exists()


def test_parts_keep_every_character_exactly(api: ApiClient) -> None:
    # NUL, quotes, backslashes, escapes, astral characters and RTL text inside parts (they travel to
    # PostgreSQL as one JSON array) come back exactly.
    odd = 'nul \x00 quote " backslash \\ \\u0000 tab \t emoji 🧭 rtl שלום newline \n ' * 4
    state = {"messages": [{"n": n, "content": odd + str(n)} for n in range(40)]}
    created = save(api, state)
    assert is_packed(stored_state(created["checkpoint_id"]))
    assert restore(api, created["checkpoint_id"]).json()["state"] == state


def _whole_hash_name(body: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(body.encode()).digest()).decode().rstrip("=")


def test_rows_that_name_parts_by_the_whole_hash_still_restore_verify_and_keep_their_parts(
    api: ApiClient, workspace: Workspace
) -> None:
    """Rows stored before 2026-12-02 name each part by its whole SHA-256 (43 characters, 32 bytes)."""
    created = save(api, chat(40))["checkpoint_id"]
    stored = stored_state(created)
    header, skeleton = stored[1:].split("\n", 1)
    parts = {bytes(d): body for d, body in StoredValue.objects.values_list("digest", "body")}
    assert {len(digest) for digest in parts} == {DIGEST_BYTES}
    named = [parts[digest] for _, digest in references(stored)]
    old_header = ",".join(
        f"{item.split(':')[0]}:{_whole_hash_name(body)}"
        for item, body in zip(header.split(","), named, strict=True)
    )
    StoredValue.objects.all().delete()
    StoredValue.objects.bulk_create(
        StoredValue(
            workspace=workspace,
            digest=hashlib.sha256(body.encode()).digest(),
            body=body,
            size_bytes=len(body),
        )
        for body in set(named)
    )
    Checkpoint.objects.filter(checkpoint_id=created).update(state=f"#{old_header}\n{skeleton}")

    assert restore(api, created).json()["state"] == chat(40)
    assert {len(digest) for digest in digests([stored_state(created)])} == {32}
    call_command("verify_integrity")  # raises on any mismatch
    assert collect_after_grace(workspace) == {"values": 0, "bytes": 0}
    assert restore(api, created).json()["state"] == chat(40)


def test_every_way_of_reading_checkpoints_gives_packed_documents_whole(
    api: ApiClient, django_assert_max_num_queries: Any
) -> None:
    """Iteration, an index, a stepped slice, get(), first(), iterator() and in_bulk() each give the state
    whole, with one query for the parts of all the rows read together; values() gives it as stored."""
    ids = [save(api, chat(40 + n))["checkpoint_id"] for n in range(3)]
    rows = Checkpoint.objects.filter(checkpoint_id__in=ids).order_by("id")
    expected = [canonical_json(chat(40 + n)) for n in range(3)]
    with django_assert_max_num_queries(2):  # the rows, then every part they name
        assert [c.state for c in rows.all()] == expected
    assert rows.all()[1].state == expected[1]
    assert [c.state for c in rows.all()[::2]] == [expected[0], expected[2]]
    assert rows.get(checkpoint_id=ids[2]).state == expected[2]
    first = rows.first()
    assert first is not None and first.state == expected[0]
    assert [c.state for c in rows.iterator(chunk_size=2)] == expected
    assert sorted(c.state or "" for c in rows.in_bulk().values()) == sorted(expected)
    assert all(is_packed(text) for text in rows.values_list("state", flat=True))
    evaluated = rows.all()
    assert len(evaluated) == 3 and evaluated[0].state == expected[0]  # an index into a result already fetched
