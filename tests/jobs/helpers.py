"""Test helpers for jobs: point the Celery app at a dead broker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from project.celery import app as celery_app

# Port 9 ("discard") has no listener on the test machines: connecting is refused at once.
DEAD_BROKER_URL = "redis://127.0.0.1:9/0"
_KEYS = ("broker_url", "broker_transport_options")


def _drop_connection_pools() -> None:
    # What Celery itself does after a fork (Celery._after_fork): the next publish opens a new connection,
    # to whatever broker_url says now.
    cast(Any, celery_app)._pool = None
    cast(Any, celery_app.amqp)._producer_pool = None


@contextmanager
def broker_down() -> Iterator[None]:
    """Within the block, every publish goes to a broker that refuses connections.

    The override lives in the app's own layer of changes and is removed afterwards (not overwritten with
    the old values), so later tests see Django's settings again, `override_settings` included."""
    changes = celery_app.conf.changes
    assert changes is not None  # set once the app is configured (it is, by the time tests run)
    before = {key: changes[key] for key in _KEYS if key in changes}
    celery_app.conf.update(broker_url=DEAD_BROKER_URL, broker_transport_options={"socket_connect_timeout": 1})
    _drop_connection_pools()
    try:
        yield
    finally:
        for key in _KEYS:
            changes.pop(key, None)
        changes.update(before)
        _drop_connection_pools()
