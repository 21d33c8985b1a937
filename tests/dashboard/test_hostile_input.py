"""Hostile query strings and form posts get a 4xx page (or a form error), never a 500 — on both databases."""

from __future__ import annotations

import base64
import json

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.models import ApiKey, Thread
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db


def cursor(position: list[object]) -> str:
    raw = json.dumps({"p": position, "b": False}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.fixture
def client_500_raises(dash: Client) -> Client:
    dash.raise_request_exception = True  # a server error fails the test with its traceback
    return dash


def test_it_answers_4xx_to_hostile_query_strings(client_500_raises: Client, world: World) -> None:
    dash = client_500_raises
    slug = world.workspace.slug
    checkpoint = reverse("dashboard:checkpoint", args=[slug, "run-1", world.step2.checkpoint_id])
    diff = reverse("dashboard:checkpoint-diff", args=[slug, "run-1", world.step2.checkpoint_id])
    cases: list[tuple[str, dict[str, str], set[int]]] = [
        (checkpoint, {"ns": "\x00"}, {400}),
        (checkpoint, {"ns": "n" * 300}, {400}),
        (diff, {"ns": "", "against": "\x00"}, {400}),
        (diff, {"ns": "", "against": "x" * 5000}, {400}),
        (diff, {"ns": "", "against": world.root.checkpoint_id, "against_thread": "\x00"}, {400}),
        (diff, {"ns": "", "against": world.root.checkpoint_id, "against_ns": "\x00"}, {400}),
        (reverse("dashboard:threads", args=[slug]), {"cursor": cursor(["\x00", "\x00"])}, {400}),
        (
            reverse("dashboard:threads", args=[slug]),
            {"cursor": cursor(["2025-01-01T00:00:00+00:00", "x"])},
            {400},
        ),
        (reverse("dashboard:threads", args=[slug]), {"cursor": cursor([1, 2, 3])}, {400}),
        (reverse("dashboard:thread", args=[slug, "run-1"]), {"cursor": cursor(["\x00"])}, {400}),
        (reverse("dashboard:thread", args=[slug, "run-1"]), {"search": "\x00"}, {200}),
        (reverse("dashboard:audit", args=[slug]), {"cursor": cursor([True])}, {400}),
        (reverse("dashboard:medallions", args=[slug]), {"graph_nodes": "a\x00", "tags": "\x00"}, {200}),
        (reverse("dashboard:medallions", args=[slug]), {"cursor": cursor(["not a date", 1])}, {400}),
        (reverse("dashboard:jobs", args=[slug]), {"status": "\x00", "kind": "<script>"}, {200}),
        (reverse("dashboard:keys", args=[slug]), {"limit": "\x00"}, {400}),
    ]
    for url, params, expected in cases:
        response = dash.get(url, params)
        assert response.status_code in expected, (url, params, response.status_code)
        assert b"<script>" not in response.content


def test_it_refuses_hostile_form_posts(client_500_raises: Client, world: World) -> None:
    dash = client_500_raises
    slug = world.workspace.slug
    fork = reverse("dashboard:checkpoint-fork", args=[slug, "run-1", world.step2.checkpoint_id]) + "?ns="
    create = reverse("dashboard:key-create", args=[slug])
    for url, data in [
        (fork, {"thread_id": "a\x00b"}),
        (fork, {"name": "a\x00b"}),
        (fork, {"name": "n" * 10_000}),
        (fork, {"thread_id": "x" * 129}),
        (create, {"name": "a\x00", "scope": "read"}),
        (create, {"name": "ok", "scope": "read", "expires_in_days": "99999999999999999999"}),
        (reverse("dashboard:thread-prune", args=[slug, "run-1"]), {"strategy": "\x00"}),
    ]:
        response = dash.post(url, data)
        assert response.status_code == 400, (url, data, response.status_code)
        assert b"field-error" in response.content
    assert Thread.objects.count() == 2 and ApiKey.objects.count() == 0
