"""Shared fixtures. Tests use PostgreSQL and Redis when DATABASE_URL / REDIS_URL are set (CI sets both),
SQLite and local memory otherwise."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import jsonpatch
import pytest
from django.core.cache import cache
from django.db import connection, transaction
from redis.connection import AbstractConnection
from rest_framework.test import APIClient

from checkpoints.models import ApiKey, Workspace
from checkpoints.services import checkpoint_reads
from checkpoints.services.workspaces import api_key_create
from checkpoints.storage import thread_memo
from checkpoints.storage.api_key_cache import api_keys_forget
from checkpoints.storage.stored_values import forget_sent_parts
from tests.factories import WorkspaceFactory

USING_POSTGRES = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))
USING_REDIS = bool(os.environ.get("REDIS_URL"))


# Fixtures that start the services a test runs on (tests/faults/conftest.py): such a test is the same on
# either backend, so it is `one_backend` (CI runs it in one suite only, docs/development.md).
OWN_SERVICES = {"pg_cluster"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_pg = pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://...")
    skip_redis = pytest.mark.skip(reason="needs Redis: set REDIS_URL=redis://...")
    for item in items:
        if OWN_SERVICES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.one_backend)
        if "postgres" in item.keywords and not USING_POSTGRES:
            item.add_marker(skip_pg)
        if "redis" in item.keywords and not USING_REDIS:
            item.add_marker(skip_redis)


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Each test starts with an empty cache (throttle counters, cached heads), no thread memo, no parts
    remembered as sent, and no key remembered or subscription to key changes (an earlier test's failed
    attempt would wait RETRY_SECONDS)."""
    cache.clear()
    thread_memo.forget_all()
    forget_sent_parts()
    api_keys_forget()
    yield


@pytest.fixture(params=[True, False], ids=["part-on", "part-off"])
def part_on_and_off(request: pytest.FixtureRequest, settings: Any) -> bool:
    """Runs a test with its module's performance PART on, then off (checkpoints.parts): the plain path must
    give the same answers. Tests marked `needs_part` pin the part's own effect and run only with it on."""
    on: bool = request.param
    if not on:
        if request.node.get_closest_marker("needs_part"):
            pytest.skip("pins the part's own effect")
        settings.CAIRN_DISABLED_PARTS = frozenset({request.module.PART})
    return on


# The marks of a module whose tests run on PostgreSQL, in real transactions, with its PART on and off.
POSTGRES_PART_ON_AND_OFF = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("part_on_and_off"),
]


class ApiClient(APIClient):
    """APIClient that knows its key and workspace (JSON is the default format, see settings)."""

    workspace: Workspace
    key: ApiKey
    secret: str


@pytest.fixture
def eager_celery(settings: Any) -> None:
    """Celery tasks run in-process when published, for tests whose subject is not the broker (the jobs suite
    runs a real worker). Set through the Django setting only: a value written to `app.conf` would shadow the
    setting for every later test in the process."""
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture(scope="module")
def rows_shared_by_module(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """For a module whose tests only read (the index tests' tens of thousands of rows): what its
    module-scoped fixtures write is made once, in a transaction that stays open while the module runs (each
    test's own transaction is a savepoint inside it) and is rolled back after the module."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)


@pytest.fixture
def workspace(db: None) -> Workspace:
    return WorkspaceFactory.create(slug="acme")


@pytest.fixture
def other_workspace(db: None) -> Workspace:
    return WorkspaceFactory.create(slug="globex")


@pytest.fixture
def make_client(db: None) -> Callable[..., ApiClient]:
    """make_client(workspace, scope="write") -> an authenticated client for a fresh key."""

    def make(workspace: Workspace, scope: str = ApiKey.Scope.WRITE) -> ApiClient:
        key, secret = api_key_create(workspace=workspace, name=f"test-{scope}", scope=scope)
        client = ApiClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        client.workspace, client.key, client.secret = workspace, key, secret
        return client

    return make


@pytest.fixture
def api(make_client: Callable[..., ApiClient], workspace: Workspace) -> ApiClient:
    """A write-scoped client for `workspace`."""
    return make_client(workspace)


@pytest.fixture
def admin_api(make_client: Callable[..., ApiClient], workspace: Workspace) -> ApiClient:
    return make_client(workspace, ApiKey.Scope.ADMIN)


@pytest.fixture
def read_api(make_client: Callable[..., ApiClient], workspace: Workspace) -> ApiClient:
    return make_client(workspace, ApiKey.Scope.READ)


@pytest.fixture
def other_api(make_client: Callable[..., ApiClient], other_workspace: Workspace) -> ApiClient:
    """A write-scoped client for another workspace (isolation tests)."""
    return make_client(other_workspace)


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


@pytest.fixture
def patch_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the comparisons that start (the step whose cost grows with the documents)."""
    calls: list[int] = []
    original = jsonpatch.make_patch

    def counted(source: Any, target: Any) -> jsonpatch.JsonPatch:
        calls.append(1)
        return original(source, target)

    monkeypatch.setattr(checkpoint_reads.jsonpatch, "make_patch", counted)
    return calls


@pytest.fixture
def redis_commands(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every write to a Redis socket from this process, by the first command it carries."""
    sent: Counter[str] = Counter()
    original = AbstractConnection.send_packed_command

    def counted(self: AbstractConnection, command: list[bytes], check_health: bool = True) -> None:
        # A packed command is RESP: "*<n>\r\n$<len>\r\n<name>\r\n..."; the pack is one or more chunks.
        first = bytes(command[0]) if command else b""
        sent[first.split(b"\r\n")[2].decode() if first.count(b"\r\n") > 2 else "?"] += 1
        original(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    return sent
