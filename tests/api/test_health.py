"""`GET /healthz`: 200 when the database, the cache and the broker answer; else 503 naming the part down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client, override_settings

from project.celery import app as celery_app

pytestmark = pytest.mark.django_db

DEAD_REDIS = "redis://127.0.0.1:1/0"  # nothing listens on port 1


def test_it_answers_200_when_everything_is_up() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "cache": "ok", "broker": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_it_needs_no_key_and_refuses_other_methods() -> None:
    assert Client().post("/healthz").status_code == 405


@override_settings(
    CACHES={
        "default": {
            "BACKEND": "checkpoints.cache.ResilientRedisCache",
            "LOCATION": DEAD_REDIS,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
)
def test_it_answers_503_naming_the_cache_when_redis_is_down() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"database": "ok", "cache": "unavailable", "broker": "ok"}


@pytest.fixture
def dead_broker() -> Iterator[None]:
    conf = celery_app.conf
    saved = {"broker_url": conf.broker_url, "broker_transport_options": conf.broker_transport_options}
    conf.update(broker_url=DEAD_REDIS, broker_transport_options={"socket_connect_timeout": 0.5})
    try:
        yield
    finally:
        conf.update(saved)


def test_it_answers_503_naming_the_broker_when_it_is_down(dead_broker: None) -> None:
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"database": "ok", "cache": "ok", "broker": "unavailable"}


def test_it_keeps_serving_the_api_when_the_cache_is_down(make_client: object, workspace: object) -> None:
    from tests.factories import make_checkpoint

    make_checkpoint(workspace, "t1", checkpoint_id="c1", state={"n": 1})  # type: ignore[arg-type]
    client = make_client(workspace)  # type: ignore[operator]
    with override_settings(
        CACHES={"default": {"BACKEND": "checkpoints.cache.ResilientRedisCache", "LOCATION": DEAD_REDIS}}
    ):
        state = client.get("/api/v1/threads/t1/state/")
        saved = client.put("/api/v1/threads/t1/state/", {"agent_id": "a", "state": {"n": 2}})
        again = client.get("/api/v1/threads/t1/state/")
    assert (state.status_code, saved.status_code, again.status_code) == (200, 201, 200)
    assert again.json()["state"] == {"n": 2}
