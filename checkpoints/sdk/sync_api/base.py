"""The blocking executor: sends one request, drives a multi-request flow, paginates."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx

from checkpoints.sdk import flows
from checkpoints.sdk.drive import drive
from checkpoints.sdk.endpoints.base import ClientSetup, Plan, endpoint
from checkpoints.sdk.models import Page
from checkpoints.sdk.transport import Call, SyncTransport

T = TypeVar("T")


class SyncBase(ClientSetup[httpx.Client]):
    """Holds the transport and the client's memory (heads and steps it has seen)."""

    _transport_type = SyncTransport
    transport: SyncTransport
    memory: flows.ClientMemory

    def bind(self, method: endpoint[Any, T]) -> Callable[..., T]:
        """`method` as a blocking method of this client (see checkpoints.sdk.endpoints)."""

        def call(*args: Any, **kwargs: Any) -> T:
            return self.execute(method.plan(self, *args, **kwargs))

        return call

    def execute(self, plan: Plan[T]) -> T:
        """Send a request, or drive a flow."""
        return self.send(plan) if isinstance(plan, Call) else self.run(plan)

    def send(self, call: Call[T]) -> T:
        """Send one prepared request (see checkpoints.sdk.endpoints)."""
        return self.transport.send(call)

    def run(self, flow: flows.Flow[T]) -> T:
        """Drive a multi-request flow (see checkpoints.sdk.flows) with blocking I/O."""
        return drive(flow, self.transport.send)

    def paginate(self, list_method: Callable[..., Page[T]], /, *args: Any, **kwargs: Any) -> Iterator[T]:
        """Every item of a list, page after page.

        `for thread in cairn.paginate(cairn.threads_list, user_id="u"): ...`
        """
        cursor: str | None = None
        while True:
            page = list_method(*args, **kwargs, cursor=cursor)
            yield from page.results
            cursor = page.next_cursor
            if not cursor:
                return
