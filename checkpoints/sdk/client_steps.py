"""Operations of the parity layers written once for `Client` and `AsyncClient`, on their public methods only.

A steps generator yields `ClientCall`s (a public client method by name) and `UserCall`s (a function of the
user's, such as a medallion LLM, awaited when it returns an awaitable) and receives their results, or has
their exception thrown into it. `run` drives it with a blocking `Client`, `arun` with an `AsyncClient`
(checkpoints.sdk.drive).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from checkpoints.sdk.drive import adrive, drive

T = TypeVar("T")


@dataclass(frozen=True)
class ClientCall:
    """`client.<method>(*args, **kwargs)`."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UserCall:
    """`fn(*args)`, awaited if it returns an awaitable (a user's coroutine, run in the agent's process)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


Steps = Generator[ClientCall | UserCall, Any, T]


def call(method: str, *args: Any, **kwargs: Any) -> ClientCall:
    return ClientCall(method, args, kwargs)


async def _awaited(value: Awaitable[T]) -> T:
    return await value


def run(client: Any, steps: Steps[T]) -> T:
    """Drive `steps` with a blocking client (a user's coroutine runs in `asyncio.run`, as the seeds do)."""

    def perform(step: ClientCall | UserCall) -> Any:
        if isinstance(step, ClientCall):
            return getattr(client, step.method)(*step.args, **step.kwargs)
        result = step.fn(*step.args)
        return asyncio.run(_awaited(result)) if inspect.isawaitable(result) else result

    return drive(steps, perform)


async def arun(client: Any, steps: Steps[T]) -> T:
    """Drive `steps` with an async client."""

    async def perform(step: ClientCall | UserCall) -> Any:
        if isinstance(step, ClientCall):
            return await getattr(client, step.method)(*step.args, **step.kwargs)
        result = step.fn(*step.args)
        return await result if inspect.isawaitable(result) else result

    return await adrive(steps, perform)
