"""The dashboard's Store page (docs/store.md): the namespace tree, items with values and TTLs, search by
meaning with scores; another workspace's items never show."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.models import StoreItem
from checkpoints.services.audit import Actor
from checkpoints.services.store import store_put
from tests.dashboard.world import World
from tests.factories import WorkspaceFactory

pytestmark = pytest.mark.django_db
ACTOR = Actor.system("test")


def page(dash: Client, world: World, **params: str) -> str:
    response = dash.get(reverse("dashboard:store", args=[world.workspace.slug]), params)
    assert response.status_code == 200
    return str(response.content.decode())


def test_it_walks_the_namespace_tree_and_shows_items(dash: Client, world: World) -> None:
    ws = world.workspace
    store_put(
        workspace=ws, actor=ACTOR, namespace=["users", "ana", "prefs"], key="theme", value={"t": "dark"}
    )
    store_put(workspace=ws, actor=ACTOR, namespace=["users", "bo"], key="lang", value={"l": "fr"}, ttl=30)
    store_put(workspace=ws, actor=ACTOR, namespace=["docs"], key="readme", value={"text": "<b>hi</b>"})
    top = page(dash, world)
    assert re.findall(r'data-namespace="([^"]+)"', top) == ["docs", "users"]
    assert {"users.ana.prefs/theme", "users.bo/lang", "docs/readme"} <= set(
        re.findall(r'data-item="([^"]+)"', top)
    )
    assert "&lt;b&gt;hi&lt;/b&gt;" in top and "<b>hi</b>" not in top  # values are escaped
    users = page(dash, world, ns="users")
    assert re.findall(r'data-namespace="([^"]+)"', users) == ["users.ana", "users.bo"]
    assert set(re.findall(r'data-item="([^"]+)"', users)) == {"users.ana.prefs/theme", "users.bo/lang"}
    assert "TTL 30 min" in users
    before = StoreItem.objects.get(key="lang").expires_at
    page(dash, world, ns="users.bo")
    assert StoreItem.objects.get(key="lang").expires_at == before  # reading here refreshes nothing


def test_its_search_ranks_by_meaning_with_scores(dash: Client, world: World) -> None:
    ws = world.workspace
    store_put(
        workspace=ws, actor=ACTOR, namespace=["kb"], key="pets", value={"text": "dogs and puppies playing"}
    )
    store_put(workspace=ws, actor=ACTOR, namespace=["kb"], key="tax", value={"text": "quarterly tax filing"})
    found = page(dash, world, q="a puppy plays with a dog")
    assert re.findall(r'data-item="kb/([^"]+)"', found) == ["pets", "tax"]
    scores = [float(s) for s in re.findall(r"<td data-score>([0-9.]+)</td>", found)]
    assert len(scores) == 2 and scores[0] > scores[1]


def test_another_workspaces_items_never_show(dash: Client, world: World) -> None:
    other = WorkspaceFactory.create(slug="elsewhere")
    store_put(
        workspace=other, actor=ACTOR, namespace=["hiddenns"], key="k", value={"text": "MARKER-zq9 plans"}
    )
    for shown in (page(dash, world, q="plans"), page(dash, world), page(dash, world, ns="hiddenns")):
        assert "MARKER-zq9" not in shown and 'data-namespace="hiddenns"' not in shown
        assert "data-item=" not in shown


@pytest.mark.parametrize("params", [{"ns": "a\x00b"}, {"ns": ".".join(["x"] * 70)}, {"q": "nul\x00"}])
def test_impossible_input_is_a_friendly_400(dash: Client, world: World, params: dict[str, str]) -> None:
    response = dash.get(reverse("dashboard:store", args=[world.workspace.slug]), params)
    assert response.status_code == 400
