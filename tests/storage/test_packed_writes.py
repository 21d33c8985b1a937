"""Pending writes stored packed: a written message is one part, shared with the checkpoint that later holds
it; every read gives the value back whole; the collector keeps what a write names (docs/storage.md)."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client

from checkpoints.integrity import canonical_json
from checkpoints.models import PendingWrite, StoredValue, Workspace
from checkpoints.packing import digest_of, digests, is_packed
from checkpoints.services.checkpoints import pending_writes_put
from tests.conftest import USING_POSTGRES, ApiClient
from tests.sdk.test_langgraph_api import body, lg_state
from tests.sdk.test_langgraph_api import save as lg_save
from tests.storage.test_stored_values import chat, collect_after_grace, save, stored_state
from tests.storage.test_verify_values import verify

# Outside a transaction: on PostgreSQL a task's writes take their one-round-trip path.
pytestmark = pytest.mark.django_db(transaction=True)

WRITES = "/api/v1/threads/t/checkpoints/{checkpoint_id}/writes/"


def answer(n: int) -> dict[str, Any]:
    """A message as LangGraph's messages channel writes it (longer than a part's least size)."""
    return {"role": "assistant", "content": f"answer {n}: " + "the ferry takes dogs on a lead. " * 6, "n": n}


def write(
    api: ApiClient, checkpoint_id: str, *values: Any, task_id: str = "task-1", idx: int | None = None
) -> Any:
    writes = [
        {"channel": "messages", "value": value, **({"idx": idx} if idx is not None else {})}
        for value in values
    ]
    response = api.post(WRITES.format(checkpoint_id=checkpoint_id), {"task_id": task_id, "writes": writes})
    assert response.status_code == 201, response.content
    return response.json()["results"]


def stored_write(task_id: str = "task-1") -> PendingWrite:
    return PendingWrite.objects.get(task_id=task_id, idx=0)


def test_a_written_message_is_one_part_which_the_next_checkpoint_names_too(api: ApiClient) -> None:
    first = save(api, chat(40))["checkpoint_id"]
    assert [w["value"] for w in write(api, first, [answer(40)])] == [[answer(40)]]
    row = stored_write()
    whole = canonical_json([answer(40)])
    assert is_packed(row.value) and len(row.value) < 40 < len(whole)
    assert row.size_bytes == len(whole.encode("utf-8"))
    part = canonical_json(answer(40))
    assert list(StoredValue.objects.filter(body=part).values_list("digest", flat=True)) == [digest_of(part)]
    # The step's next checkpoint holds the message as its newest element: it names the same part.
    state = chat(40)
    state["messages"].append(answer(40))
    second = save(api, state)["checkpoint_id"]
    assert digest_of(part) in digests([stored_state(second)])
    assert StoredValue.objects.filter(body=part).count() == 1
    listed = api.get(WRITES.format(checkpoint_id=first)).json()["results"]
    assert [w["value"] for w in listed] == [[answer(40)]]


def test_every_read_of_a_packed_write_gives_it_back_whole(api: ApiClient) -> None:
    first = "lg1"
    saved = lg_save(api, "t", body("t", first, lg_state({"messages": ["hi"]}, {"messages": "1"})))
    assert saved.status_code == 201, saved.content
    write(api, first, [answer(1), answer(2)], "short")
    expected = [[answer(1), answer(2)], "short"]
    assert is_packed(stored_write().value)
    listed = api.get(WRITES.format(checkpoint_id=first)).json()["results"]
    assert [w["value"] for w in listed] == expected
    tuples = api.get("/api/v1/langgraph/checkpoints/?thread_id=t&namespace=").json()["results"]
    assert [w["value"] for w in tuples[0]["pending_writes"]] == expected
    storage = api.get("/api/v1/threads/t/storage/").json()
    whole_bytes = sum(len(canonical_json(value).encode("utf-8")) for value in expected)
    assert storage["totals"]["writes_bytes"] == whole_bytes
    copied = api.post("/api/v1/threads/t/copy/", {"thread_id": "t2"})
    assert copied.status_code == 201, copied.content
    copy = api.get(f"/api/v1/threads/t2/checkpoints/{first}/writes/").json()["results"]
    assert [w["value"] for w in copy] == expected
    forked = api.post("/api/v1/threads/t/fork/", {"checkpoint_id": first, "thread_id": "t3"})
    assert forked.status_code == 201, forked.content
    fork = api.get(f"/api/v1/threads/t3/checkpoints/{first}/writes/").json()["results"]
    assert [w["value"] for w in fork] == expected


def test_a_batch_of_tasks_stores_its_writes_packed(api: ApiClient) -> None:
    first = save(api, chat(3))["checkpoint_id"]
    tasks = [
        {
            "checkpoint_id": first,
            "task_id": f"task-{n}",
            "writes": [{"channel": "messages", "value": [answer(n)]}],
        }
        for n in range(2)
    ]
    response = api.post("/api/v1/langgraph/threads/t/writes/", {"tasks": tasks})
    assert response.status_code == 201, response.content
    assert response.json() == {"tasks": 2}
    assert all(is_packed(w.value) for w in PendingWrite.objects.all())
    listed = api.get(WRITES.format(checkpoint_id=first)).json()["results"]
    assert [w["value"] for w in listed] == [[answer(0)], [answer(1)]]


def test_a_special_write_replacing_a_packed_one_keeps_its_own_size(api: ApiClient) -> None:
    first = save(api, chat(3))["checkpoint_id"]
    write(api, first, [answer(1)], idx=-1)
    assert is_packed(PendingWrite.objects.get(idx=-1).value)
    assert [w["value"] for w in write(api, first, "done", idx=-1)] == ["done"]
    replaced = PendingWrite.objects.get(idx=-1)
    assert (replaced.value, replaced.size_bytes) == ('"done"', None)
    assert api.get("/api/v1/threads/t/storage/").json()["totals"]["writes_bytes"] == len('"done"')


def test_the_collector_keeps_a_part_only_a_write_names(api: ApiClient, workspace: Workspace) -> None:
    first = save(api, chat(3))["checkpoint_id"]
    write(api, first, [answer(7)])
    part = digest_of(canonical_json(answer(7)))
    collect_after_grace(workspace)
    assert StoredValue.objects.filter(digest=part).exists()
    assert [w["value"] for w in api.get(WRITES.format(checkpoint_id=first)).json()["results"]] == [
        [answer(7)]
    ]
    assert api.delete("/api/v1/threads/t/").status_code == 204
    assert collect_after_grace(workspace)["values"] >= 1
    assert not StoredValue.objects.filter(digest=part).exists()


def test_a_write_naming_a_missing_part_is_refused_as_altered_not_a_server_error(
    api: ApiClient, workspace: Workspace, admin_client: Client
) -> None:
    first = save(api, chat(3))["checkpoint_id"]
    write(api, first, [answer(5)])
    StoredValue.objects.filter(body=canonical_json(answer(5))).delete()
    response = api.get(WRITES.format(checkpoint_id=first))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "checksum_mismatch"
    assert "task-1" in response.json()["error"]["message"]
    saved = lg_save(api, "t", body("t", "lg1", lg_state({"messages": ["hi"]}, {"messages": "1"})))
    assert saved.status_code == 201, saved.content
    write(api, "lg1", [answer(5)])
    StoredValue.objects.filter(body=canonical_json(answer(5))).delete()
    tuples = api.get("/api/v1/langgraph/checkpoints/?thread_id=t&namespace=")
    assert tuples.status_code == 409 and tuples.json()["error"]["code"] == "checksum_mismatch"
    broken = PendingWrite.objects.get(checkpoint_id=first)
    page = admin_client.get(f"/admin/checkpoints/pendingwrite/{broken.pk}/change/")
    assert page.status_code == 200 and b"names a stored part that is missing" in page.content


@pytest.mark.skipif(not USING_POSTGRES, reason="the statement inside a transaction is PostgreSQL's")
def test_writes_inside_a_transaction_store_their_parts_in_it(api: ApiClient, workspace: Workspace) -> None:
    first = save(api, chat(3))["checkpoint_id"]
    with transaction.atomic():
        stored = pending_writes_put(
            workspace=workspace,
            thread_id="t",
            namespace="",
            checkpoint_id=first,
            task_id="task-9",
            task_path="",
            writes=[{"channel": "messages", "value": [answer(9)]}],
        )
        assert [w.value for w in stored] == [canonical_json([answer(9)])]
        assert StoredValue.objects.filter(body=canonical_json(answer(9))).exists()
    assert is_packed(stored_write("task-9").value)


def test_verify_integrity_names_the_writes_whose_parts_are_missing_or_altered(api: ApiClient) -> None:
    first = save(api, chat(3))["checkpoint_id"]
    write(api, first, [answer(1)], task_id="kept")
    write(api, first, [answer(2)], task_id="altered")
    write(api, first, [answer(3)], task_id="lost")
    assert verify() == (
        0,
        [
            "checked 3 stored values, 0 mismatched",
            "checked 3 packed writes, 0 mismatched",
            "checked 1 checkpoints, 0 mismatched",
        ],
    )
    StoredValue.objects.filter(body=canonical_json(answer(2))).update(body=canonical_json(answer(20)))
    lost = digest_of(canonical_json(answer(3)))
    StoredValue.objects.filter(digest=lost).delete()
    code, lines = verify()
    altered = digest_of(canonical_json(answer(2))).hex()
    assert code == 1
    line = f"MISMATCH write workspace=acme thread=t namespace='' checkpoint={first} task="
    assert f"{line}altered idx=0 altered_parts={altered}" in lines
    assert f"{line}lost idx=0 missing_parts={lost.hex()}" in lines
    assert "checked 3 packed writes, 2 mismatched" in lines


@pytest.mark.parametrize("filler", [200, 5000])
def test_a_write_nested_as_deep_as_the_api_allows_is_stored_and_read_back_whole(
    api: ApiClient, filler: int
) -> None:
    first = save(api, chat(3))["checkpoint_id"]
    value: Any = {"text": "deep " * (filler // 5), "list": ["word " * 40] * 20}
    for level in range(settings.CAIRN_MAX_JSON_DEPTH - 8):  # the body's own levels come on top
        value = {"level": level, "inner": value, "pad": "x" * 130}
    assert [w["value"] for w in write(api, first, value)] == [value]
    assert is_packed(stored_write().value)
    assert [w["value"] for w in api.get(WRITES.format(checkpoint_id=first)).json()["results"]] == [value]
