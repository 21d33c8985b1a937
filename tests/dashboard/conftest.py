"""Dashboard fixtures: users with and without access, logged-in clients, and a populated workspace."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from checkpoints.models import Workspace
from tests.dashboard.fixtures import _fast_password_hashing, world  # noqa: F401  (shared fixtures)
from tests.dashboard.world import make_user


@pytest.fixture
def staff(workspace: Workspace) -> User:
    """A staff member of `workspace` only."""
    return make_user("alice", workspaces=(workspace,))


@pytest.fixture
def dash(client: Client, staff: User) -> Client:
    client.force_login(staff)
    return client


@pytest.fixture
def eager_jobs(eager_celery: None) -> None:
    """Jobs run in-process when published (the broker is not what dashboard tests test; the jobs suite runs
    a real worker). Publishing happens on commit: wrap requests in django_capture_on_commit_callbacks."""
