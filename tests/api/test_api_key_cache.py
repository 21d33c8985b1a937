"""Remembered API keys (checkpoints.storage.api_key_cache): no query per request once a key is known,
revocation and workspace changes effective at once, the database whenever the shared cache cannot answer,
a bound for changes written around Cairn, and a fast key's rate counted from leases. Two tests serve two
gunicorn workers: one revokes a key from another process while both have it remembered, one spends a key's
rate across both."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from checkpoints.api.throttling import rate_window
from checkpoints.bench.server import Gunicorn, Stack, bench_database
from checkpoints.models import ApiKey, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.retention import retention_policy_update
from checkpoints.services.workspaces import api_key_revoke
from checkpoints.storage.api_key_cache import api_keys_forget
from tests.conftest import USING_POSTGRES, USING_REDIS, ApiClient

URL = "/api/v1/threads/t1/checkpoints/"
LIST = "/api/v1/checkpoints/"

pytestmark = pytest.mark.usefixtures("part_on_and_off")
PART = "api_key_cache"  # run on and off: checkpoints.parts


@pytest.mark.needs_part
@pytest.mark.django_db
def test_a_key_is_read_once_then_remembered(
    api: ApiClient, django_assert_num_queries: Callable[..., Any]
) -> None:
    api_keys_forget()
    with django_assert_num_queries(3):  # the key with its workspace; its last_used_at; the page
        assert api.get(LIST).status_code == 200
    for _ in range(3):
        with django_assert_num_queries(1):  # the page
            assert api.get(LIST).status_code == 200


@pytest.mark.django_db
def test_a_wrong_secret_for_a_remembered_prefix_is_refused(api: ApiClient) -> None:
    assert api.get(LIST).status_code == 200
    prefix_only = api.secret.rsplit("_", 1)[0]
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {prefix_only}_{'x' * 43}")
    response = api.get(LIST)
    assert response.status_code == 401 and response.json()["error"]["code"] == "not_authenticated"


@pytest.mark.django_db
def test_a_key_changed_in_the_admin_is_reloaded_at_once(api: ApiClient) -> None:
    assert api.post(URL, {"agent_id": "a", "state": {}}).status_code == 201
    key = ApiKey.objects.get(pk=api.key.pk)
    key.scope = ApiKey.Scope.READ
    key.save()  # what the admin's change form does
    response = api.post(URL, {"agent_id": "a", "state": {}})
    assert response.status_code == 403 and "'write' scope" in response.json()["error"]["message"]
    key.delete()
    assert api.get(LIST).status_code == 401


@pytest.mark.django_db
def test_a_revoked_key_is_refused_although_remembered(api: ApiClient) -> None:
    assert api.get(LIST).status_code == 200
    api_key_revoke(api_key=ApiKey.objects.get(pk=api.key.pk), actor=Actor.system())
    assert api.get(LIST).status_code == 401


@pytest.mark.django_db
def test_the_workspace_default_ttl_applies_to_the_next_save(api: ApiClient) -> None:
    assert api.post(URL, {"agent_id": "a", "state": {}}).json()["expires_at"] is None
    workspace = Workspace.objects.get(pk=api.workspace.pk)
    retention_policy_update(workspace=workspace, actor=Actor.system(), default_ttl_seconds=60)
    assert api.post(URL, {"agent_id": "a", "state": {}}).json()["expires_at"] is not None


@pytest.mark.django_db
def test_without_the_shared_cache_every_request_reads_the_key(
    api: ApiClient, settings: Any, django_assert_num_queries: Callable[..., Any]
) -> None:
    assert api.get(LIST).status_code == 200
    # A Redis nobody listens on: the generation cannot be read, so nothing remembered is trusted.
    settings.CACHES = {
        "default": {
            "BACKEND": "checkpoints.cache.ResilientRedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    for _ in range(2):
        with django_assert_num_queries(2):  # the key with its workspace; the page
            assert api.get(LIST).status_code == 200
    ApiKey.objects.filter(pk=api.key.pk).update(scope=ApiKey.Scope.READ)
    assert api.post(URL, {"agent_id": "a", "state": {}}).status_code == 403


@pytest.mark.needs_part
@pytest.mark.django_db
def test_a_change_written_around_cairn_is_seen_within_the_bound(api: ApiClient, settings: Any) -> None:
    assert api.post(URL, {"agent_id": "a", "state": {}}).status_code == 201
    ApiKey.objects.filter(pk=api.key.pk).update(scope=ApiKey.Scope.READ)  # raw SQL: no signal
    assert api.post(URL, {"agent_id": "a", "state": {}}).status_code == 201  # still remembered
    settings.CAIRN_API_KEY_CACHE_SECONDS = 0
    assert api.post(URL, {"agent_id": "a", "state": {}}).status_code == 403


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Stack, Gunicorn, str]]:
    import os

    with bench_database(os.environ["DATABASE_URL"], f"cairn_keys_{os.getpid()}") as database_url:
        stack = Stack.create(database_url, os.environ["REDIS_URL"], tmp_path)
        stack.manage("migrate", "--no-input")
        secret = stack.api_key("keys")
        try:
            with Gunicorn(stack, workers=2) as web:
                yield stack, web, secret
        finally:
            stack.forget_cache()


def two_workers(test: Callable[..., None]) -> Callable[..., None]:
    """A test that serves two gunicorn workers (`served`): slow, and only on PostgreSQL and Redis."""
    slow = pytest.mark.needs_part(pytest.mark.slow(test))  # the children run with every part on
    return pytest.mark.skipif(not (USING_POSTGRES and USING_REDIS), reason="needs PostgreSQL and Redis")(slow)


def statuses(web: Gunicorn, secret: str, requests: int) -> Counter[int]:
    """The answers to `requests` list requests with the key, each on a fresh connection."""
    headers = {"Authorization": f"Bearer {secret}"}
    return Counter(httpx.get(f"{web.url}{LIST}", headers=headers).status_code for _ in range(requests))


@two_workers
def test_revocation_from_another_process_reaches_every_worker_at_once(
    served: tuple[Stack, Gunicorn, str],
) -> None:
    stack, web, secret = served
    # Many requests on fresh connections: both workers serve some, and remember the key.
    assert statuses(web, secret, 40) == Counter({200: 40})
    prefix = secret.split("_")[1]
    stack.manage(
        "shell",
        "-c",
        "from checkpoints.models import ApiKey\n"
        "from checkpoints.services.audit import Actor\n"
        "from checkpoints.services.workspaces import api_key_revoke\n"
        f"api_key_revoke(api_key=ApiKey.objects.get(prefix={prefix!r}), actor=Actor.system())",
    )
    assert statuses(web, secret, 40) == Counter({401: 40})


@pytest.mark.django_db
def test_wrong_secrets_for_a_known_prefix_do_not_spend_the_keys_rate(api: ApiClient) -> None:
    ApiKey.objects.filter(pk=api.key.pk).update(throttle_rate="3/min")
    api_keys_forget()
    assert api.get(LIST).status_code == 200  # remembered now: 1 of 3
    secret = api.secret
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret.rsplit('_', 1)[0]}_{'x' * 43}")
    assert {api.get(LIST).status_code for _ in range(5)} == {401}
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert [api.get(LIST).status_code for _ in range(3)] == [200, 200, 429]


@two_workers
def test_two_workers_counting_from_leases_never_pass_more_than_the_rate(
    served: tuple[Stack, Gunicorn, str],
) -> None:
    stack, web, _secret = served
    # Fresh connections, so both workers serve (and lease) throughout; well past the rate, so each worker
    # is asked again after the limit and spends what it still holds.
    # A day's window, so the run never straddles two windows (a minute's would, one run in six).
    answers = statuses(web, stack.api_key("leases", throttle_rate="400/day"), 480)  # leases of 4 hits
    assert set(answers) == {200, 429}
    assert 400 - 3 <= answers[200] <= 400, answers


@pytest.mark.django_db
def test_a_lease_counts_a_fast_key_exactly_in_one_process(api: ApiClient) -> None:
    ApiKey.objects.filter(pk=api.key.pk).update(throttle_rate="250/day")  # leases of 2; one window throughout
    api_keys_forget()
    answers = [api.get(LIST).status_code for _ in range(252)]
    assert answers == [200] * 250 + [429, 429]


def test_a_slow_key_is_counted_per_request_and_a_fast_one_in_bounded_leases() -> None:
    assert [rate_window(ApiKey(pk=1, throttle_rate=rate)).lease for rate in ("3/min", "199/min")] == [1, 1]
    assert rate_window(ApiKey(pk=1, throttle_rate="6000/min")).lease == 60
    assert rate_window(ApiKey(pk=1, throttle_rate="1000000/s")).lease == 64
