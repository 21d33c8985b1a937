"""The dashboard's Content-Security-Policy: on every page, and never on the API."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from checkpoints.models import ApiKey
from tests.dashboard.test_access import key, urls_for  # noqa: F401  (the fixture)
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db


def test_every_dashboard_page_forbids_inline_code_and_other_origins(
    world: World,
    staff: User,
    key: ApiKey,  # noqa: F811
) -> None:
    client = Client()
    client.force_login(staff)
    pages = [(client, url) for _, url, action in urls_for(world, key) if not action]
    for page_client, url in [*pages, (Client(), "/dashboard/login/")]:
        response = page_client.get(url)
        assert response.status_code == 200, url
        policy = response.headers["Content-Security-Policy"]
        directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
        assert directives["script-src"] == directives["style-src"] == "'self'", url
        assert directives["frame-ancestors"] == "'none'" and "unsafe-inline" not in policy, url


def test_the_api_carries_no_policy(api: object) -> None:
    response = Client().get("/api/v1/threads/")
    assert response.status_code == 401
    assert "Content-Security-Policy" not in response.headers
