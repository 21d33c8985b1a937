"""Latency samples and the concurrent-client loop every benchmark uses."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class BenchError(RuntimeError):
    """A benchmark could not measure what it claims to (an unexpected answer, a server that did not start)."""


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of `values` (which need not be sorted); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Sample:
    """Latencies (seconds) of one measured operation, and the wall time the whole run took."""

    latencies: list[float] = field(default_factory=list)
    wall: float = 0.0

    @property
    def p50_ms(self) -> float:
        return percentile(self.latencies, 0.50) * 1000

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies, 0.99) * 1000

    @property
    def mean_ms(self) -> float:
        return sum(self.latencies) / len(self.latencies) * 1000 if self.latencies else 0.0

    @property
    def ops_per_s(self) -> float:
        return len(self.latencies) / self.wall if self.wall else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "n": len(self.latencies),
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "mean_ms": round(self.mean_ms, 3),
            "ops_per_s": round(self.ops_per_s, 1),
        }


# One client's operation: called with the operation's index (0, 1, ...) for that client.
Operation = Callable[[int], None]


def run_clients(clients: int, operations: int, make_operation: Callable[[int], Operation]) -> Sample:
    """Run `operations` operations on each of `clients` threads at once; time each and the whole run.

    `make_operation(client_index)` builds a client's operation before the clock starts (its connection,
    its payloads), so setup never counts. All clients start together at a barrier. The first error of any
    client stops the run and is raised.
    """
    ops = [make_operation(index) for index in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        barrier.wait()
        own = latencies[index]
        try:
            for n in range(operations):
                if errors:
                    return
                started = time.perf_counter()
                ops[index](n)
                own.append(time.perf_counter() - started)
        except BaseException as exc:  # re-raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if errors:
        raise errors[0]
    return Sample([value for own in latencies for value in own], wall)


def run_for(
    seconds: float, operation: Callable[[], None], *, until: Callable[[], bool] | None = None
) -> Sample:
    """Repeat `operation` on this thread for `seconds` (or until `until()` is true, checked between
    operations, whichever comes first) and time each call."""
    sample = Sample()
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline and not (until is not None and until()):
        began = time.perf_counter()
        operation()
        sample.latencies.append(time.perf_counter() - began)
    sample.wall = time.perf_counter() - started
    return sample
