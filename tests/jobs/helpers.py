"""Test helpers for jobs: point the Celery app at a dead broker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from project.celery import app as celery_app

# Port 9 ("discard") has no listener on the test machines: connecting is refused at once.
DEAD_BROKER_URL = "redis://127.0.0.1:9/0"


def _drop_connection_pools() -> None:
    # What Celery itself does after a fork (Celery._after_fork): the next publish opens a new connection,
    # to whatever broker_url says now.
    cast(Any, celery_app)._pool = None
    cast(Any, celery_app.amqp)._producer_pool = None


@contextmanager
def broker_down() -> Iterator[None]:
    """Within the block, every publish goes to a broker that refuses connections."""
    conf = celery_app.conf
    saved = (conf.broker_url, conf.broker_transport_options, conf.task_always_eager)
    conf.update(
        broker_url=DEAD_BROKER_URL,
        broker_transport_options={"socket_connect_timeout": 1},
        task_always_eager=False,
    )
    _drop_connection_pools()
    try:
        yield
    finally:
        conf.update(broker_url=saved[0], broker_transport_options=saved[1], task_always_eager=saved[2])
        _drop_connection_pools()
