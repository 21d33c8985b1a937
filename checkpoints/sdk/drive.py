"""The one difference between the blocking and the async SDK: how a step is waited for.

Everything that takes several steps is written once, as a generator that yields steps and receives their
results (or has their exception thrown into it): a request's attempts and retries (checkpoints.sdk.transport),
a flow of several requests (checkpoints.sdk.flows), an integration's operation (checkpoints.sdk.client_steps).
`drive` performs the steps with blocking calls, `adrive` awaits them; a `Sleep` step waits without blocking
an event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Sleep:
    """Yielded to wait `seconds` before the next step."""

    seconds: float


def drive(steps: Generator[Any, Any, T], perform: Callable[[Any], Any]) -> T:
    """Run `steps` to the end with blocking calls; returns what the generator returns."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            step = steps.send(result) if error is None else steps.throw(error)
        except StopIteration as stop:
            return stop.value
        result, error = None, None
        try:
            if isinstance(step, Sleep):
                time.sleep(step.seconds)
            else:
                result = perform(step)
        except Exception as exc:
            error = exc


async def adrive(steps: Generator[Any, Any, T], perform: Callable[[Any], Awaitable[Any]]) -> T:
    """Run `steps` to the end without blocking the event loop."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            step = steps.send(result) if error is None else steps.throw(error)
        except StopIteration as stop:
            return stop.value
        result, error = None, None
        try:
            if isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
            else:
                result = await perform(step)
        except Exception as exc:
            error = exc
