"""Tenant isolation on every route of the project, generated from the URL conf: a new endpoint or page is
tested the moment it is routed, and one the classification does not know fails the suite.

Workspace A holds a realistic world (tests/dashboard/world.py) with a secret marker in a checkpoint, a
message and a pending write. Workspace B's admin key and B's staff user then try every method of every route
with A's ids (and, for lists, filters naming A's objects):
- a route that addresses an object by id answers 404 `not_found`, exactly as for an id that exists nowhere —
  except the writes that create under the caller's own ids (saving into "thread X" creates B's thread X);
- lists answer B's data only (empty here);
- no response ever contains A's marker, and nothing of A changes (rows, checksums, expiry, audit log, keys,
  policy).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from django.urls import reverse

from checkpoints.models import (
    ApiKey,
    AuditEvent,
    Checkpoint,
    Job,
    Medallion,
    Message,
    PendingWrite,
    StoreItem,
    Thread,
    Workspace,
)
from checkpoints.services.annotations import annotation_create
from checkpoints.services.audit import Actor
from checkpoints.services.messages import messages_append
from checkpoints.services.store import store_put
from checkpoints.services.workspaces import api_key_create
from tests.conftest import ApiClient
from tests.dashboard.world import World, build_world, make_user
from tests.factories import make_checkpoint, make_pending_write
from tests.security.routes import PUBLIC, Route, all_routes, routes_of

pytestmark = pytest.mark.django_db

MARKER = "SECRET-OF-WORKSPACE-A-7f3c"
# Writes that create under the caller's own workspace (ids are per workspace): not a 404 but a 2xx in B.
CREATES_IN_OWN_WORKSPACE = {
    ("api:thread-checkpoints", "post"),
    ("api:thread-state", "put"),
    ("api:checkpoint-writes", "post"),
    ("api:langgraph-checkpoint-save", "post"),
    ("api:langgraph-writes", "post"),
    ("api:thread-messages", "post"),
}


# A's store item lives in a namespace that names the marker: listing it anywhere would show it.
STORE_NAMESPACE = ("memories", MARKER)
STORE_ITEM = {"namespace": list(STORE_NAMESPACE), "key": "fact"}


@dataclass
class Tenants:
    world: World
    ids: dict[str, str]  # URL argument -> A's object
    missing: dict[str, str]  # URL argument -> an object that exists nowhere
    intruder_api: ApiClient
    intruder_staff: User


@pytest.fixture
def tenants(
    workspace: Workspace, other_workspace: Workspace, make_client: Callable[..., ApiClient]
) -> Tenants:
    world = build_world(workspace)
    thread_id = world.thread.thread_id
    secret = make_checkpoint(
        workspace, thread_id, run_id="run-a", state={"secret": MARKER}, metadata={"m": MARKER}
    )
    messages_append(
        workspace=workspace,
        thread_id=thread_id,
        messages=[{"message_id": "m-secret", "role": "user", "content": MARKER}],
    )
    make_pending_write(secret, MARKER)
    annotation = annotation_create(
        thread=secret.thread, actor=Actor.system(), comment=MARKER, verdict="wrong", checkpoint=secret
    )
    store_put(
        workspace=workspace, actor=Actor.system(), namespace=STORE_NAMESPACE, key="fact", value={"s": MARKER}
    )
    key, _ = api_key_create(workspace=workspace, name="victim")
    job = Job.objects.filter(workspace=workspace).first()
    assert job is not None
    return Tenants(
        world=world,
        ids={
            "slug": workspace.slug,
            "thread_id": thread_id,
            "checkpoint_id": secret.checkpoint_id,
            "message_id": "m-secret",
            "annotation_id": str(annotation.annotation_id),
            "agent_id": secret.agent_id,
            "medallion_id": str(world.medallion.medallion_id),
            "job_id": str(job.job_id),
            "prefix": key.prefix,
        },
        missing={
            "slug": "no-such-workspace",
            "thread_id": "no-such-thread",
            "checkpoint_id": "no-such-checkpoint",
            "message_id": "no-such-message",
            "annotation_id": str(uuid.uuid4()),
            "agent_id": "no-such-agent",
            "medallion_id": str(uuid.uuid4()),
            "job_id": str(uuid.uuid4()),
            "prefix": "nosuchpr",
        },
        intruder_api=make_client(other_workspace, ApiKey.Scope.ADMIN),
        intruder_staff=make_user("mallory", workspaces=(other_workspace,)),
    )


def bodies(t: Tenants) -> dict[tuple[str, str], Any]:
    """Valid bodies, naming A's objects wherever a body can name one."""
    scope = {"graph_nodes": ["billing"], "tags": ["refactor"]}  # the scope of A's medallion
    return {
        ("api:thread-state", "put"): {"agent_id": "b", "state": {"mine": True}},
        ("api:thread-checkpoints", "post"): {"agent_id": "b", "state": {"mine": True}},
        ("api:langgraph-checkpoint-save", "post"): {"agent_id": "b", "state": {"mine": True}},
        ("api:checkpoint-ttl", "post"): {"ttl_seconds": 60, "pinned": False},
        ("api:checkpoint-handoff", "post"): {"target_agent_id": "b"},
        ("api:checkpoint-writes", "post"): {"task_id": "t", "writes": [{"channel": "c", "value": 1}]},
        ("api:langgraph-writes", "post"): {
            "tasks": [
                {
                    "checkpoint_id": t.ids["checkpoint_id"],
                    "task_id": "t",
                    "writes": [{"channel": "c", "value": 1}],
                }
            ]
        },
        ("api:threads", "post"): {"thread_id": t.ids["thread_id"], "name": "mine"},
        ("api:thread-detail", "patch"): {"name": "taken over", "pinned": True},
        ("api:thread-fork", "post"): {"checkpoint_id": t.ids["checkpoint_id"], "thread_id": "fork-b"},
        ("api:thread-copy", "post"): {"thread_id": "copy-b"},
        ("api:thread-prune", "post"): {"strategy": "delete"},
        ("api:thread-messages", "post"): {"messages": [{"role": "user", "content": "mine"}]},
        ("api:thread-annotations", "post"): {"comment": "mine", "checkpoint_id": t.ids["checkpoint_id"]},
        ("api:langgraph-runs-delete", "post"): {"run_ids": ["run-a"]},
        ("api:retention", "put"): {"keep_latest": 1},
        ("api:medallions", "post"): {"scope": scope, "summary": {"high_level": "Mine.", "subsystems": []}},
        ("api:medallion-checkpoint", "post"): {
            "scope": scope,
            "evidence": {"session_summary": "x"},
            "thread_id": t.ids["thread_id"],
        },
        ("api:medallion-detail", "patch"): {"status": "stale"},
        ("api:store-items", "put"): {**STORE_ITEM, "value": {"taken": True}},
        ("api:store-items", "delete"): STORE_ITEM,
        ("api:store-items-search", "post"): {"namespace_prefix": ["memories"], "filter": {"s": MARKER}},
        ("api:store-namespaces", "post"): {"prefix": ["memories"]},
        ("api:store-batch", "post"): {
            "ops": [
                {"op": "get", **STORE_ITEM},
                {"op": "search", "namespace_prefix": list(STORE_NAMESPACE)},
                {"op": "list_namespaces"},
                {"op": "put", **STORE_ITEM, "value": None},
            ]
        },
    }


def queries(t: Tenants) -> dict[str, dict[str, str]]:
    """Filters naming A's objects, for the lists."""
    return {
        "api:checkpoints": {"thread_id": t.ids["thread_id"], "agent_id": "planner"},
        "api:messages": {"search": MARKER, "thread_id": t.ids["thread_id"]},
        "api:langgraph-checkpoints": {"thread_id": t.ids["thread_id"], "run_id": "run-a"},
        "api:medallions": {"graph_nodes": "billing", "tags": "refactor"},
        "api:jobs": {"kind": "summarize"},
        "api:threads": {"q": "run"},
        "api:store-items": {"namespace": ".".join(STORE_NAMESPACE), "key": "fact"},
    }


def snapshot(workspace: Workspace) -> list[Any]:
    """Everything of a workspace an intruder could change."""
    workspace.refresh_from_db()
    threads = Thread.objects.filter(workspace=workspace).order_by("pk")
    checkpoints = Checkpoint.objects.filter(workspace=workspace).order_by("pk")
    messages = Message.objects.filter(thread__workspace=workspace).order_by("pk")
    writes = PendingWrite.objects.filter(thread__workspace=workspace).order_by("pk")
    return [
        list(
            threads.values_list(
                "pk", "thread_id", "name", "pinned", "updated_at", "state_version", "expires_at"
            )
        ),
        list(checkpoints.values_list("pk", "checksum", "state", "expires_at", "pinned", "expired_at")),
        list(messages.values_list("pk", "content")),
        list(writes.values_list("pk", "value")),
        list(
            Medallion.objects.filter(workspace=workspace)
            .order_by("pk")
            .values_list("pk", "version", "status")
        ),
        list(Job.objects.filter(workspace=workspace).order_by("pk").values_list("pk", "status")),
        AuditEvent.objects.filter(workspace=workspace).count(),
        list(ApiKey.objects.filter(workspace=workspace).order_by("pk").values_list("pk", "revoked_at")),
        (workspace.default_ttl_seconds, workspace.keep_latest, workspace.thread_idle_ttl_seconds),
        (workspace.tombstone_retention_seconds, workspace.auto_summarize_every),
        list(
            StoreItem.objects.filter(workspace=workspace)
            .order_by("pk")
            .values_list("pk", "namespace", "key", "value", "updated_at", "expires_at")
        ),
    ]


def error_code(content: bytes) -> str | None:
    try:
        return str(json.loads(content)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return None


def api_cases() -> list[tuple[str, str]]:
    return [(route.name, method) for route in routes_of("api") for method in route.methods]


def dashboard_cases() -> list[tuple[str, str]]:
    return [(route.name, method) for route in routes_of("dashboard") for method in ("get", "post")]


ROUTES = {route.name: route for route in all_routes()}


def test_every_route_is_classified() -> None:
    unknown = [str(route) for route in all_routes() if route.kind == "unknown"]
    assert unknown == [], (
        "New routes must say how they are isolated (tests/security/routes.py): " + ", ".join(unknown)
    )
    assert len(api_cases()) >= 45 and len(dashboard_cases()) >= 40
    assert Route("api/v2/x/", "x", (), None).kind == "unknown"  # what an unplanned route looks like


def api_problem(t: Tenants, name: str, method: str) -> str | None:
    """What is wrong with B's answer to one API route and method, or None."""
    route = ROUTES[name]
    body = bodies(t).get((name, method))
    query = queries(t).get(name, {}) if method == "get" else {}
    victim = t.world.workspace
    before = snapshot(victim)

    def call(ids: dict[str, str]) -> Any:
        url = reverse(name, kwargs={arg: ids[arg] for arg in route.arguments})
        if method == "get":
            return t.intruder_api.get(url, query)
        return getattr(t.intruder_api, method)(url, body, format="json")

    response = call(t.ids)
    if response.status_code >= 500 or MARKER.encode() in response.content:
        return f"answered {response.status_code} with {response.content[:300]!r}"
    if snapshot(victim) != before:
        return "changed the other workspace"
    if (name, method) in CREATES_IN_OWN_WORKSPACE:
        own = Thread.objects.filter(workspace=t.intruder_api.workspace, thread_id=t.ids["thread_id"])
        if response.status_code != 201 or not own.exists():
            return f"did not create in its own workspace: {response.status_code} {response.content[:300]!r}"
    elif route.arguments:
        # A's object is invisible: the same answer as for one that exists nowhere.
        absent = call(t.missing)
        answers = {(r.status_code, error_code(r.content)) for r in (response, absent)}
        if answers != {(404, "not_found")}:
            return f"not a 404 like a missing id: {response.status_code} {response.content[:300]!r}"
    elif method == "get" and isinstance(response.json(), dict) and response.json().get("results", []) != []:
        return f"listed something: {response.content[:300]!r}"
    elif name.startswith("api:store-") and response.status_code not in (200, 204, 404):
        return f"refused a valid store request: {response.status_code} {response.content[:300]!r}"
    return None


def dashboard_problem(t: Tenants, client: Client, name: str, method: str) -> str | None:
    """What is wrong with B's staff user's answer to one dashboard route and method, or None."""
    route = ROUTES[name]
    before = snapshot(t.world.workspace)
    form = {
        "strategy": "delete",
        "name": "x",
        "scope": "admin",
        "ttl_seconds": "60",
        "thread_id": "fork-b",
        # Fork with changes and the retention editor: values that would change A if they reached it.
        "state": '{"taken": true}',
        "carry": "none",
        "keep_latest": "1",
        "tombstone_retention_seconds_0": "1",
        "tombstone_retention_seconds_1": "seconds",
        "auto_summarize_every": "1",
    }
    statuses = []
    for ids in (t.ids, t.missing):
        url = reverse(name, kwargs={arg: ids[arg] for arg in route.arguments})
        response = client.get(url) if method == "get" else client.post(url, form)
        statuses.append(response.status_code)
        if MARKER.encode() in response.content:
            return "showed the other workspace's data"
    if statuses != [404, 404]:
        return f"answered {statuses} (A's ids, missing ids) instead of [404, 404]"
    if snapshot(t.world.workspace) != before:
        return "changed the other workspace"
    return None


def each_in_a_savepoint(cases: list[tuple[str, str]], check: Callable[[str, str], str | None]) -> list[str]:
    """Run every case against the same world, each rolled back afterwards (what one case creates in B, such
    as B's own thread with A's thread id, must not change the next case's answer); the problems found."""
    problems = []
    for name, method in cases:
        with transaction.atomic():
            problem = check(name, method)
            transaction.set_rollback(True)
        if problem:
            problems.append(f"{method.upper()} {name}: {problem}")
    return problems


def test_the_api_never_crosses_workspaces(tenants: Tenants) -> None:
    problems = each_in_a_savepoint(api_cases(), lambda name, method: api_problem(tenants, name, method))
    assert problems == [], "\n".join(problems)


def test_the_dashboard_never_crosses_workspaces(tenants: Tenants, client: Client) -> None:
    client.force_login(tenants.intruder_staff)
    cases = dashboard_cases()
    problems = each_in_a_savepoint(
        cases, lambda name, method: dashboard_problem(tenants, client, name, method)
    )
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_the_public_routes_show_no_workspace_data(tenants: Tenants, client: Client, name: str) -> None:
    route = ROUTES[name]
    client.force_login(tenants.intruder_staff)
    url = reverse(name)
    response = client.get(url) if "get" in route.methods else client.post(url)
    assert response.status_code < 500
    content = response.content.decode(errors="replace")
    assert MARKER not in content and f"/w/{tenants.ids['slug']}/" not in content
