"""The async executor: sends one request, drives a multi-request flow, paginates — never blocking the loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import httpx

from checkpoints.sdk import flows
from checkpoints.sdk.drive import adrive
from checkpoints.sdk.endpoints.base import ClientSetup, Plan, endpoint
from checkpoints.sdk.models import Page
from checkpoints.sdk.transport import AsyncTransport, Call

T = TypeVar("T")


class AsyncBase(ClientSetup[httpx.AsyncClient]):
    """Holds the transport and the client's memory (heads and steps it has seen)."""

    _transport_type = AsyncTransport
    transport: AsyncTransport
    memory: flows.ClientMemory

    def bind(self, method: endpoint[Any, T]) -> Callable[..., Coroutine[Any, Any, T]]:
        """`method` as a coroutine method of this client (see checkpoints.sdk.endpoints). The plan is made
        when the coroutine runs, so bad arguments raise at the `await`, as in any coroutine."""

        async def call(*args: Any, **kwargs: Any) -> T:
            return await self.execute(method.plan(self, *args, **kwargs))

        return call

    async def execute(self, plan: Plan[T]) -> T:
        """Send a request, or drive a flow."""
        return await (self.send(plan) if isinstance(plan, Call) else self.run(plan))

    async def send(self, call: Call[T]) -> T:
        """Send one prepared request (see checkpoints.sdk.endpoints)."""
        return await self.transport.send(call)

    async def run(self, flow: flows.Flow[T]) -> T:
        """Drive a multi-request flow (see checkpoints.sdk.flows) without blocking the event loop."""
        return await adrive(flow, self.transport.send)

    async def paginate(
        self, list_method: Callable[..., Awaitable[Page[T]]], /, *args: Any, **kwargs: Any
    ) -> AsyncIterator[T]:
        """Every item of a list, page after page.

        `async for thread in cairn.paginate(cairn.threads_list, user_id="u"): ...`
        """
        cursor: str | None = None
        while True:
            page = await list_method(*args, **kwargs, cursor=cursor)
            for item in page.results:
                yield item
            cursor = page.next_cursor
            if not cursor:
                return
