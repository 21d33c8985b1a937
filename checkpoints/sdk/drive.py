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
from typing import Any, TypeVar, cast

T = TypeVar("T")


@dataclass(frozen=True)
class Sleep:
    """Yielded to wait `seconds` before the next step."""

    seconds: float


class _Stepper:
    """The steps of a generator, one at a time: each is taken after sending the previous step's `result` (or
    throwing its `error`) in. `value` is what the generator returned, once iteration ends."""

    def __init__(self, steps: Generator[Any, Any, Any]) -> None:
        self.steps = steps
        self.result: Any = None
        self.error: Exception | None = None
        self.value: Any = None

    def __iter__(self) -> _Stepper:
        return self

    def __next__(self) -> Any:
        result, error, self.result, self.error = self.result, self.error, None, None
        try:
            return self.steps.send(result) if error is None else self.steps.throw(error)
        except StopIteration as stop:
            self.value = stop.value
            raise StopIteration from None


def drive(steps: Generator[Any, Any, T], perform: Callable[[Any], Any]) -> T:
    """Run `steps` to the end with blocking calls; returns what the generator returns."""
    stepper = _Stepper(steps)
    for step in stepper:
        try:
            if isinstance(step, Sleep):
                time.sleep(step.seconds)
            else:
                stepper.result = perform(step)
        except Exception as exc:
            stepper.error = exc
    return cast(T, stepper.value)


async def adrive(steps: Generator[Any, Any, T], perform: Callable[[Any], Awaitable[Any]]) -> T:
    """Run `steps` to the end without blocking the event loop."""
    stepper = _Stepper(steps)
    for step in stepper:
        try:
            if isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
            else:
                stepper.result = await perform(step)
        except Exception as exc:
            stepper.error = exc
    return cast(T, stepper.value)
