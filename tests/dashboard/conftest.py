"""Dashboard fixtures: users with and without access, logged-in clients, and a populated workspace."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from checkpoints.models import Workspace
from tests.dashboard.world import World, build_world, make_user


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: SettingsWrapper) -> None:
    """Test users log in with a known password; the production hasher's cost only slows the suite."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def staff(workspace: Workspace) -> User:
    """A staff member of `workspace` only."""
    return make_user("alice", workspaces=(workspace,))


@pytest.fixture
def dash(client: Client, staff: User) -> Client:
    client.force_login(staff)
    return client


@pytest.fixture
def world(workspace: Workspace) -> World:
    return build_world(workspace)


@pytest.fixture
def eager_jobs(eager_celery: None) -> None:
    """Jobs run in-process when published (the broker is not what dashboard tests test; the jobs suite runs
    a real worker). Publishing happens on commit: wrap requests in django_capture_on_commit_callbacks."""
