"""Admin fixtures: a superuser client, a populated workspace and a row of every registered model."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from checkpoints.services.checkpoints import pending_writes_put
from checkpoints.services.workspaces import api_key_create
from tests.dashboard.fixtures import _fast_password_hashing, world  # noqa: F401  (shared fixtures)
from tests.dashboard.world import World, make_user


@pytest.fixture
def superuser(db: None) -> User:
    return make_user("root", superuser=True)


@pytest.fixture
def admin_client(client: Client, superuser: User) -> Client:
    client.force_login(superuser)
    return client


@pytest.fixture
def everything(world: World) -> World:  # noqa: F811  (the shared fixture, requested)
    """At least one row of every registered model."""
    api_key_create(workspace=world.workspace, name="ops")
    pending_writes_put(
        workspace=world.workspace,
        thread_id=world.thread.thread_id,
        namespace="",
        checkpoint_id=world.step2.checkpoint_id,
        task_id="task-1",
        task_path="",
        writes=[{"channel": "messages", "value": {"text": "hi"}}],
    )
    Group.objects.create(name="auditors")
    make_user("alice", workspaces=(world.workspace,))
    return world
