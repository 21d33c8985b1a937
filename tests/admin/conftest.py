"""Admin fixtures: a superuser client and a populated workspace."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.dashboard.fixtures import _fast_password_hashing, world  # noqa: F401  (shared fixtures)
from tests.dashboard.world import make_user


@pytest.fixture
def superuser(db: None) -> User:
    return make_user("root", superuser=True)


@pytest.fixture
def admin_client(client: Client, superuser: User) -> Client:
    client.force_login(superuser)
    return client
