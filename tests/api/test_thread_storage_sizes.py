"""Logical and stored bytes of a thread over the API: `storage` on `GET threads/{id}/` and the totals of
`storage/`, checked against sizes computed from the stored rows (docs/storage.md)."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.api.serializers.threads import (
    StorageTotalsSerializer,
    ThreadDetailSerializer,
    ThreadStorageSerializer,
)
from checkpoints.models import Thread
from checkpoints.services.audit import Actor
from checkpoints.services.threads import thread_copy
from checkpoints.storage import stored_values
from tests.conftest import ApiClient
from tests.factories import make_checkpoint
from tests.storage.sizes import Expected, build_packed_thread, expected_for_thread, packed_rows

pytestmark = pytest.mark.django_db

THREADS = "/api/v1/threads/"


def sizes_of(api: ApiClient, thread_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    detail = api.get(f"{THREADS}{thread_id}/")
    storage = api.get(f"{THREADS}{thread_id}/storage/")
    assert detail.status_code == storage.status_code == 200, (detail.content, storage.content)
    return detail.json(), storage.json()


def assert_reports(detail: dict[str, Any], storage: dict[str, Any], expected: Expected) -> None:
    assert set(ThreadDetailSerializer().fields) == set(detail)  # every rendered key is documented
    assert set(ThreadStorageSerializer().fields) == set(storage)
    assert set(StorageTotalsSerializer().fields) == set(storage["totals"])
    assert detail["storage"] == {"logical_bytes": expected.logical, "stored_bytes": expected.stored}
    assert detail["storage_bytes"] == expected.logical == storage["totals"]["bytes"]
    assert storage["parts"] == {"count": expected.parts, "bytes": expected.part_bytes}
    totals = storage["totals"]
    assert (totals["state_bytes"], totals["state_stored_bytes"]) == (
        expected.state_logical,
        expected.state_stored,
    )
    assert totals["stored_bytes"] == expected.stored


def test_a_packed_thread_reports_its_skeletons_and_distinct_parts(api: ApiClient) -> None:
    thread = build_packed_thread(api.workspace)
    assert packed_rows(thread) == 2
    expected = expected_for_thread(thread)
    detail, storage = sizes_of(api, "t")
    assert_reports(detail, storage, expected)
    # The second save names the first one's parts: the two documents are stored in little more than one.
    assert expected.parts > 1 and expected.stored < 0.6 * expected.logical


def test_a_thread_of_small_documents_stores_what_it_holds(api: ApiClient) -> None:
    make_checkpoint(api.workspace, "small", state={"a": "é"})
    make_checkpoint(api.workspace, "small", namespace="sub", state=[1, 2])
    thread = Thread.objects.get(thread_id="small")
    assert packed_rows(thread) == 0
    detail, storage = sizes_of(api, "small")
    assert_reports(detail, storage, expected_for_thread(thread))
    assert storage["totals"]["state_stored_bytes"] == storage["totals"]["state_bytes"] == 23
    assert detail["storage"] == {"logical_bytes": 23, "stored_bytes": 23}


def test_parts_shared_with_another_thread_count_once_in_each(api: ApiClient) -> None:
    source = build_packed_thread(api.workspace)
    thread_copy(source=source, thread_id="copy", actor=Actor.system("test"))
    copy = Thread.objects.get(thread_id="copy")
    for thread in (source, copy):
        detail, storage = sizes_of(api, thread.thread_id)
        assert_reports(detail, storage, expected_for_thread(thread))
    assert sizes_of(api, "copy")[1]["parts"] == sizes_of(api, "t")[1]["parts"]


def test_parts_are_summed_in_batches(api: ApiClient, monkeypatch: pytest.MonkeyPatch) -> None:
    thread = build_packed_thread(api.workspace)
    expected = expected_for_thread(thread)
    monkeypatch.setattr(stored_values, "PARTS_PER_QUERY", 2)
    detail, storage = sizes_of(api, "t")
    assert_reports(detail, storage, expected)


def test_the_detail_reads_parts_only_for_a_packed_thread(
    api: ApiClient, django_assert_num_queries: Any
) -> None:
    build_packed_thread(api.workspace)
    make_checkpoint(api.workspace, "small", state={"a": 1})
    api.get(f"{THREADS}small/")  # warm the key (remembered, last_used_at written)
    with django_assert_num_queries(1):  # the thread with every stat as a subquery
        api.get(f"{THREADS}small/")
    with django_assert_num_queries(3):  # and, as it has packed rows, their headers, then the parts named
        api.get(f"{THREADS}t/")


def test_the_created_thread_reports_empty_storage(api: ApiClient) -> None:
    created = api.post(THREADS, {"thread_id": "new"})
    assert created.status_code == 201
    assert created.json()["storage"] == {"logical_bytes": 0, "stored_bytes": 0}
