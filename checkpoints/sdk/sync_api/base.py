"""The blocking executor: sends one request, drives a multi-request flow, paginates."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from checkpoints.sdk import flows
from checkpoints.sdk.endpoints.base import Plan, endpoint
from checkpoints.sdk.errors import CairnError
from checkpoints.sdk.models import Page
from checkpoints.sdk.transport import Call, SyncTransport

T = TypeVar("T")


class SyncBase:
    """Holds the transport and the client's memory (heads and steps it has seen)."""

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
        """Send one prepared request (see checkpoints.sdk.calls)."""
        return self.transport.send(call)

    def run(self, flow: flows.Flow[T]) -> T:
        """Drive a multi-request flow (see checkpoints.sdk.flows) with blocking I/O."""
        try:
            step = next(flow)
            while True:
                if isinstance(step, flows.Sleep):
                    time.sleep(step.seconds)
                    step = flow.send(None)
                    continue
                try:
                    result = self.transport.send(step)
                except CairnError as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(result)
        except StopIteration as stop:
            return cast(T, stop.value)

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
