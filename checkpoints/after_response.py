"""Work a request can leave until its response has been sent: filling the head cache, which the
client does not wait for. Queued per request and run when the request finishes (Django's
`request_finished`, which the server sends once it has written the response: gunicorn closes the response
after its last byte), or at once outside a request (jobs, commands, the shell). See
docs/performance.md, and docs/architecture.md."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

_requests = threading.local()


def after_response(work: Callable[[], None]) -> None:
    """Run `work` once the current request's response has been sent; outside a request, now."""
    queue: list[Callable[[], None]] | None = getattr(_requests, "queue", None)
    if queue is None:
        work()
    else:
        queue.append(work)


def _run(queue: list[Callable[[], None]] | None) -> None:
    for work in queue or ():
        try:
            work()
        except Exception:  # a cache write that failed must not fail the next request
            logger.exception("work after the response failed")


def _request_started(**_kwargs: Any) -> None:
    _run(getattr(_requests, "queue", None))  # a request that never finished (should not happen) leaves none
    _requests.queue = []


def _request_finished(**_kwargs: Any) -> None:
    queue = getattr(_requests, "queue", None)
    _requests.queue = None
    _run(queue)


def connect_signals() -> None:
    from django.core.signals import request_finished, request_started

    request_started.connect(_request_started, dispatch_uid="after_response.started")
    request_finished.connect(_request_finished, dispatch_uid="after_response.finished")
