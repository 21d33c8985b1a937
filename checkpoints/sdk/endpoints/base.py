"""`endpoint`: one API method described once, run blocking by `Client` and awaited by `AsyncClient`.

A method's body only plans the work: it returns the request (a `Call`) or a multi-request flow (see
checkpoints.sdk.flows). The client the method is read from executes the plan — `Client` with blocking I/O,
`AsyncClient` as a coroutine — so both clients have exactly the same methods, parameters and defaults.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from checkpoints.sdk import flows
from checkpoints.sdk.transport import Call

if TYPE_CHECKING:
    from typing import Self

    from checkpoints.sdk.async_api.base import AsyncBase
    from checkpoints.sdk.sync_api.base import SyncBase

P = ParamSpec("P")
T = TypeVar("T")

Plan = Call[T] | flows.Flow[T]
"""What a method body returns: one request, or a flow of several."""

_PLAN_ANNOTATION = re.compile(r"^(?:Call|flows\.Flow)\[(?P<result>.*)\]$")


class Executor(Protocol):
    """A client: it turns a method's bound plan into the method's result (or an awaitable of it)."""

    def bind(self, method: endpoint[Any, Any]) -> Callable[..., Any]: ...


class Endpoints:
    """Base of the method groups: what a plan may read from the client."""

    memory: flows.ClientMemory


class endpoint(Generic[P, T]):
    """Decorates a planning method of an `Endpoints` group. Read from a `Client` it is a blocking method;
    from an `AsyncClient`, a coroutine method with the same signature."""

    def __init__(self, plan: Callable[Concatenate[Any, P], Plan[T]]) -> None:
        self.plan = plan
        self.__name__ = plan.__name__
        self.__doc__ = plan.__doc__
        self.signature = _public_signature(plan)

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, client: SyncBase, owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(self, client: AsyncBase, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, client: Executor | None, owner: type[Any]) -> Any:
        if client is None:
            return self
        method = client.bind(self)
        functools.update_wrapper(method, self.plan)
        method.__signature__ = self.signature  # type: ignore[attr-defined]
        return method


def _public_signature(plan: Callable[..., Any]) -> inspect.Signature:
    """The plan's signature as callers see it: without `self`, returning the plan's result type."""
    signature = inspect.signature(plan)
    annotation = _PLAN_ANNOTATION.match(str(signature.return_annotation))
    return signature.replace(
        parameters=list(signature.parameters.values())[1:],
        return_annotation=annotation["result"] if annotation else inspect.Signature.empty,
    )
