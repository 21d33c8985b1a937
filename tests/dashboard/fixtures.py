"""Fixtures the dashboard and admin tests share (imported by tests/dashboard/conftest.py and
tests/admin/conftest.py): fast password hashing and the populated workspace."""

from __future__ import annotations

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from checkpoints.models import Workspace
from tests.dashboard.world import World, build_world


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: SettingsWrapper) -> None:
    """Test users log in with a known password; the production hasher's cost only slows the suite."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def world(workspace: Workspace) -> World:
    return build_world(workspace)
