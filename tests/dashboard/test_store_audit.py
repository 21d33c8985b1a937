"""Store item writes in the dashboard's audit log (docs/store.md): listed, and found by the `store.*`
filter."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.services.audit import Actor
from checkpoints.services.store import store_delete, store_put
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db


def test_store_item_writes_are_in_the_audit_log(dash: Client, world: World) -> None:
    actor = Actor.system("agent-memory")
    store_put(workspace=world.workspace, actor=actor, namespace=["users", "ana"], key="likes", value={"t": 1})
    store_delete(workspace=world.workspace, actor=actor, namespace=["users", "ana"], key="likes")
    url = reverse("dashboard:audit", args=[world.workspace.slug])
    page = dash.get(url, {"action": "store.*"}).content.decode()
    assert page.count("users.ana/likes") == 2
    assert "store.item.put" in page and "store.item.delete" in page
    options = dash.get(url).content.decode()
    assert 'value="store.*"' in options
