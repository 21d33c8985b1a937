"""Admin fixtures: a superuser client and a populated workspace."""

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
def superuser(db: None) -> User:
    return make_user("root", superuser=True)


@pytest.fixture
def admin_client(client: Client, superuser: User) -> Client:
    client.force_login(superuser)
    return client


@pytest.fixture
def world(workspace: Workspace) -> World:
    return build_world(workspace)
