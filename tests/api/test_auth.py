"""API keys on the checkpoint API: authentication, revocation, expiry, scopes and per-key throttling."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.cache import cache
from django.test import override_settings

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import ApiKey, AuditEvent, Checkpoint, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.workspaces import api_key_create, api_key_revoke
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

URL = "/api/v1/threads/t1/checkpoints/"
REALM = 'Bearer realm="cairn"'


def _assert_401(response: object) -> None:
    assert response.status_code == 401  # type: ignore[attr-defined]
    assert response.json()["error"]["code"] == "not_authenticated"  # type: ignore[attr-defined]
    assert response["WWW-Authenticate"] == REALM  # type: ignore[index]


def test_it_answers_401_with_www_authenticate_without_a_key(client: object, workspace: Workspace) -> None:
    from rest_framework.test import APIClient

    response = APIClient().get(URL)
    _assert_401(response)
    assert response.json()["error"]["message"] == "Authentication credentials were not provided."


@pytest.mark.parametrize(
    "header",
    [
        "Bearer nonsense",
        "Bearer cairn_",
        "Bearer cairn_abcdefgh_wrongsecret",
        "Bearer cairn_ABCDEFGH_secret",
        "Bearer cairn_abc\x00efgh_secret",
        "Bearer cairn_abcdefgh-secret",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer two parts",
        "Bearer cl\u00e9",
    ],
)
def test_it_answers_401_for_an_invalid_key(api: ApiClient, header: str) -> None:
    from rest_framework.test import APIClient

    anonymous = APIClient()
    anonymous.credentials(HTTP_AUTHORIZATION=header)
    _assert_401(anonymous.get(URL))


def test_it_answers_401_for_a_right_prefix_with_a_wrong_secret(api: ApiClient) -> None:
    from rest_framework.test import APIClient

    forged = APIClient()
    forged.credentials(HTTP_AUTHORIZATION=f"Bearer cairn_{api.key.prefix}_{'x' * 43}")
    _assert_401(forged.get(URL))


def test_it_refuses_a_revoked_key_from_the_very_next_request(api: ApiClient) -> None:
    assert api.post(URL, {"agent_id": "a", "state": {}}).status_code == 201
    api_key_revoke(api_key=api.key, actor=Actor.system())
    _assert_401(api.get(URL))
    _assert_401(api.post(URL, {"agent_id": "a", "state": {}}))
    assert Checkpoint.objects.count() == 1
    assert AuditEvent.objects.filter(action="apikey.revoke", target_id=api.key.prefix).count() == 1


def test_it_refuses_an_expired_key_at_its_expiry(
    make_client: Callable[..., ApiClient], workspace: Workspace
) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    with time_machine.travel(start, tick=False) as traveller:
        _key, secret = api_key_create(
            workspace=workspace, name="short", expires_at=start + timedelta(hours=1)
        )
        client = make_client(workspace)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        traveller.move_to(start + timedelta(minutes=59, seconds=59))
        assert client.get(URL).status_code == 404  # authenticated; the thread does not exist
        traveller.move_to(start + timedelta(hours=1))
        _assert_401(client.get(URL))


def test_it_records_last_use_at_most_once_a_minute(api: ApiClient) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    with time_machine.travel(start, tick=False) as traveller:
        api.get(URL)
        api.key.refresh_from_db()
        assert api.key.last_used_at == start
        traveller.move_to(start + timedelta(seconds=30))
        api.get(URL)
        api.key.refresh_from_db()
        assert api.key.last_used_at == start
        traveller.move_to(start + timedelta(seconds=61))
        api.get(URL)
        api.key.refresh_from_db()
        assert api.key.last_used_at == start + timedelta(seconds=61)


WRITES = [
    ("post", "/api/v1/threads/t1/checkpoints/", {"agent_id": "a", "state": {}}),
    ("put", "/api/v1/threads/t1/state/", {"agent_id": "a", "state": {}}),
    ("delete", "/api/v1/threads/t1/checkpoints/c1/", None),
    ("post", "/api/v1/threads/t1/checkpoints/c1/ttl/", {"ttl_seconds": 60}),
    ("post", "/api/v1/threads/t1/checkpoints/c1/handoff/", {"target_agent_id": "b"}),
    (
        "post",
        "/api/v1/threads/t1/checkpoints/c1/writes/",
        {"task_id": "t", "writes": [{"channel": "c", "value": 1}]},
    ),
]
READS = [
    "/api/v1/threads/t1/state/",
    "/api/v1/threads/t1/checkpoints/",
    "/api/v1/threads/t1/checkpoints/c1/",
    "/api/v1/threads/t1/checkpoints/c1/diff/",
    "/api/v1/threads/t1/checkpoints/c1/lineage/",
    "/api/v1/threads/t1/checkpoints/c1/writes/",
    "/api/v1/checkpoints/",
    "/api/v1/checkpoints/c1/",
]


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_it_forbids_every_write_to_a_read_key(
    read_api: ApiClient, method: str, url: str, body: object
) -> None:
    checkpoint = make_checkpoint(read_api.workspace, "t1", checkpoint_id="c1")
    before = Checkpoint.objects.values_list("checkpoint_id", "expires_at", "expired_at").get(pk=checkpoint.pk)

    response = getattr(read_api, method)(url, body)

    assert response.status_code == 403
    assert response.json()["error"] == {
        "code": "permission_denied",
        "message": "This request needs the 'write' scope; the key has 'read'.",
        "details": {},
    }
    assert Checkpoint.objects.count() == 1
    assert (
        Checkpoint.objects.values_list("checkpoint_id", "expires_at", "expired_at").get(pk=checkpoint.pk)
        == before
    )


@pytest.mark.parametrize("url", READS)
def test_it_lets_a_read_key_read(read_api: ApiClient, url: str) -> None:
    make_checkpoint(read_api.workspace, "t1", checkpoint_id="c1")
    response = read_api.get(url)
    assert response.status_code == 200, response.json()


def test_it_throttles_per_key_with_retry_after(
    make_client: Callable[..., ApiClient], workspace: Workspace
) -> None:
    limited = make_client(workspace)
    other = make_client(workspace)
    ApiKey.objects.filter(pk=limited.key.pk).update(throttle_rate="3/min")
    with time_machine.travel(datetime(2026, 3, 1, 0, 0, 20, tzinfo=UTC), tick=False):
        assert [limited.get(URL).status_code for _ in range(3)] == [404, 404, 404]
        refused = limited.get(URL)
        # Another key of the same workspace has its own budget.
        assert other.get(URL).status_code == 404

    assert refused.status_code == 429
    assert refused["Retry-After"] == "40"
    assert refused.json()["error"] == {
        "code": "throttled",
        "message": "Too many requests; retry in 40 s.",
        "details": {"retry_after": 40},
    }
    with time_machine.travel(datetime(2026, 3, 1, 0, 1, 0, tzinfo=UTC), tick=False):
        assert limited.get(URL).status_code == 404


@override_settings(CAIRN_THROTTLE_RATE="2/s")
def test_it_throttles_with_the_default_rate_when_the_key_has_none(api: ApiClient) -> None:
    with time_machine.travel(datetime(2026, 3, 1, 0, 0, 0, 500_000, tzinfo=UTC), tick=False):
        statuses = [api.get(URL).status_code for _ in range(3)]
    assert statuses == [404, 404, 429]


@pytest.mark.parametrize("rate", ["banana", "0/min", "-1/s", "5/fortnight", "5", "/min", "1e3/s", "5/min/x"])
@override_settings(CAIRN_THROTTLE_RATE="2/s")
def test_it_falls_back_to_the_default_rate_for_a_bad_stored_rate(api: ApiClient, rate: str) -> None:
    ApiKey.objects.filter(pk=api.key.pk).update(throttle_rate=rate)
    with time_machine.travel(datetime(2026, 3, 1, 0, 0, 0, 500_000, tzinfo=UTC), tick=False):
        statuses = [api.get(URL).status_code for _ in range(3)]
    assert statuses == [404, 404, 429]


@pytest.mark.parametrize("rate", ["banana", "0/min", "-1/s", "5/fortnight", "5"])
def test_it_refuses_a_bad_rate_when_creating_a_key(workspace: Workspace, rate: str) -> None:
    with pytest.raises(ValidationFailed) as error:
        api_key_create(workspace=workspace, name="k", throttle_rate=rate)
    assert list(error.value.details["fields"]) == ["throttle_rate"]
    assert not ApiKey.objects.exists()


@pytest.mark.parametrize(
    ("rate", "stored"), [("100/s", "100/s"), ("6000/min", "6000/min"), (" 5 / Hour ", " 5 / Hour ")]
)
def test_it_accepts_good_rates_when_creating_a_key(workspace: Workspace, rate: str, stored: str) -> None:
    key, _ = api_key_create(workspace=workspace, name="k", throttle_rate=rate)
    assert key.throttle_rate == stored


@pytest.mark.redis
def test_it_counts_requests_in_redis(make_client: Callable[..., ApiClient], workspace: Workspace) -> None:
    import redis

    limited = make_client(workspace)
    ApiKey.objects.filter(pk=limited.key.pk).update(throttle_rate="100/min")
    moment = datetime(2026, 3, 1, 0, 0, 20, tzinfo=UTC)
    with time_machine.travel(moment, tick=False):
        for _ in range(3):
            limited.get(URL)
    window = int(moment.timestamp() // 60)
    key = cache.make_key(f"throttle:{limited.key.pk}:60:{window}")
    server = redis.Redis.from_url(os.environ["REDIS_URL"])
    assert server.get(key) == b"3"
    assert 0 < server.ttl(key) <= 61
