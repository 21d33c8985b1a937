"""`manage.py verify_integrity` checks the stored parts of packed checkpoints too: a part altered in place
is reported with every checkpoint naming it, and a missing part is named on its checkpoint's line
(docs/storage.md)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from checkpoints.models import Checkpoint, StoredValue
from checkpoints.packing import digests, is_packed
from tests.conftest import ApiClient
from tests.storage.test_pack_command import big_state

pytestmark = pytest.mark.django_db


def save(api: ApiClient, thread: str, state: Any) -> str:
    response = api.post(f"/api/v1/threads/{thread}/checkpoints/", {"agent_id": "a", "state": state})
    assert response.status_code == 201, response.content
    checkpoint_id: str = response.json()["checkpoint_id"]
    return checkpoint_id


def named_parts(checkpoint_id: str) -> set[bytes]:
    state = Checkpoint.objects.filter(checkpoint_id=checkpoint_id).values_list("state", flat=True).get()
    assert is_packed(state)
    return digests([state])


def verify(*args: str) -> tuple[int, list[str]]:
    """Run verify_integrity; returns its exit code and its lines."""
    out = StringIO()
    try:
        call_command("verify_integrity", *args, stdout=out)
    except SystemExit as exit_info:
        return int(exit_info.code or 0), out.getvalue().splitlines()
    return 0, out.getvalue().splitlines()


def mismatch_line(thread: str, checkpoint_id: str) -> str:
    return f"MISMATCH workspace=acme thread={thread} namespace='' checkpoint={checkpoint_id}"


@pytest.fixture
def shared(api: ApiClient) -> tuple[str, str, bytes]:
    """Two packed checkpoints in two threads naming one same part; returns their ids and that part."""
    first, second = save(api, "one", big_state(1)), save(api, "two", big_state(2))
    common = named_parts(first) & named_parts(second)
    assert common
    return first, second, min(common)


def test_it_checks_every_stored_value_and_exits_0_when_all_match(
    shared: tuple[str, str, bytes], other_api: ApiClient
) -> None:
    save(other_api, "one", big_state(1))
    values = StoredValue.objects.count()
    code, lines = verify()
    assert code == 0
    assert lines == [f"checked {values} stored values, 0 mismatched", "checked 3 checkpoints, 0 mismatched"]
    acme_values = StoredValue.objects.filter(workspace__slug="acme").count()
    assert verify("--workspace", "acme")[1][0] == f"checked {acme_values} stored values, 0 mismatched"


def test_a_value_altered_in_place_is_reported_with_every_checkpoint_naming_it(
    api: ApiClient, shared: tuple[str, str, bytes]
) -> None:
    first, second, part = shared
    StoredValue.objects.filter(digest=part).update(body='{"forged":true}')
    code, lines = verify()
    assert code == 1
    values = StoredValue.objects.count()
    assert lines == [
        f"MISMATCH value workspace=acme digest={part.hex()}",
        f"checked {values} stored values, 1 mismatched",
        f"{mismatch_line('one', first)} altered_parts={part.hex()}",
        f"{mismatch_line('two', second)} altered_parts={part.hex()}",
        "checked 2 checkpoints, 2 mismatched",
    ]
    assert api.get(f"/api/v1/threads/one/checkpoints/{first}/").status_code == 409


def test_a_missing_value_is_named_on_every_checkpoint_naming_it(
    api: ApiClient, shared: tuple[str, str, bytes]
) -> None:
    first, second, part = shared
    StoredValue.objects.filter(digest=part).delete()
    code, lines = verify()
    assert code == 1
    assert lines[1:] == [
        f"{mismatch_line('one', first)} missing_parts={part.hex()}",
        f"{mismatch_line('two', second)} missing_parts={part.hex()}",
        "checked 2 checkpoints, 2 mismatched",
    ]
    assert api.get(f"/api/v1/threads/one/checkpoints/{first}/").status_code == 409


def test_it_checks_only_the_values_of_the_workspace_asked_for(
    shared: tuple[str, str, bytes], other_api: ApiClient
) -> None:
    save(other_api, "one", big_state(1))
    StoredValue.objects.filter(workspace__slug="globex").update(body="forged")
    assert verify("--workspace", "acme")[0] == 0
    code, lines = verify("--workspace", "globex")
    assert code == 1
    assert lines[0].startswith("MISMATCH value workspace=globex digest=")
    assert lines[-1] == "checked 1 checkpoints, 1 mismatched"
