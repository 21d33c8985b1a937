"""Run workers at the same instant, each in its own thread with its own database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import connection


def run_concurrently(workers: list[Callable[[], None]], timeout: float = 240) -> list[BaseException]:
    """Start every worker at once (a barrier) and wait for all; return what they raised (tests assert [])."""
    barrier = threading.Barrier(len(workers))
    errors: list[BaseException] = []

    def run(work: Callable[[], None]) -> None:
        try:
            barrier.wait()
            work()
        except BaseException as exc:  # handed to the test, which fails on any
            errors.append(exc)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(work,)) for work in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), "a worker hung"
    return errors
