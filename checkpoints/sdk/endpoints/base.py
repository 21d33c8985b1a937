"""One API method described once, run blocking by `Client` and awaited by `AsyncClient`.

Each REST call is written once, as a request builder: a plain function returning the request (a `Call`:
path, method, parameters, body, how to read the answer, which statuses mean "already done"). Flows of
several requests (checkpoints.sdk.flows) yield those same builders' calls. A client method is a builder bound
as it is (`request(builder)`), or a short planning method (`@endpoint`) where the method needs the client's
memory. The client the method is read from executes the plan — `Client` with blocking I/O, `AsyncClient` as
a coroutine — so both clients have exactly the same methods, parameters and defaults.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import os
import re
from collections.abc import Callable, Coroutine, Iterable, Mapping
from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    Literal,
    ParamSpec,
    Protocol,
    TypeVar,
    cast,
    overload,
)
from urllib.parse import quote

from checkpoints.sdk import flows
from checkpoints.sdk.jsonvalue import to_json_object
from checkpoints.sdk.models import UNSET, Checkpoint, Page, Unset
from checkpoints.sdk.retry import RetryPolicy
from checkpoints.sdk.transport import DEFAULT_LIMITS, DEFAULT_TIMEOUT, Call, Response

if TYPE_CHECKING:
    from typing import Self

    import httpx

    from checkpoints.sdk.async_api.base import AsyncBase
    from checkpoints.sdk.sync_api.base import SyncBase

__all__ = ["UNSET", "Unset"]

P = ParamSpec("P")
T = TypeVar("T")
HttpT = TypeVar("HttpT")

Plan = Call[T] | flows.Flow[T]
"""What a method body returns: one request, or a flow of several."""

_PLAN_ANNOTATION = re.compile(r"^(?:Call|(?:flows\.)?Flow)\[(?P<result>.*)\]$")


# --- what every request builder shares ----------------------------------------------------------------------


def seg(value: str) -> str:
    """One path segment, percent-encoded (an id with `/` must not change the route)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string id, got {value!r}")
    return quote(value, safe="")


def params(**values: Any) -> list[tuple[str, str]]:
    """Query parameters: None is left out, lists repeat the key, bools are true/false, datetimes ISO 8601,
    dicts JSON."""
    result: list[tuple[str, str]] = []
    for key, value in values.items():
        if value is None or value is UNSET:
            continue
        items: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
        for item in items:
            result.append((key, _param(item)))
    return result


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("timestamps must be timezone-aware")
        return value.isoformat()
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return str(value)


def with_params(call: Call[T], **values: Any) -> Call[T]:
    """The same request with more query parameters (e.g. a flow scoping a public call to one end user)."""
    return dataclasses.replace(call, params=[*call.params, *params(**values)])


def body_of(**values: Any) -> dict[str, Any]:
    """A request body without the arguments left UNSET (None stays: it is an explicit null)."""
    return {key: value for key, value in values.items() if value is not UNSET}


def positive_limit(limit: int | None) -> int | None:
    # 0 is refused here too: "limit=0 returns everything" was a seed bug (pyagenity).
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    return limit


def list_params(arguments: Mapping[str, Any], *left_out: str) -> list[tuple[str, str]]:
    """The query of a list request: its builder's arguments (`locals()`, in signature order) but those
    `left_out` (in the path, or sent under another name). `limit` must be a positive integer and `metadata` a
    JSON object (matched by containment); a flag left False is not sent (the server's default)."""
    values = {name: value for name, value in arguments.items() if name not in left_out}
    if "limit" in values:
        values["limit"] = positive_limit(values["limit"])
    if values.get("metadata") is not None:
        values["metadata"] = to_json_object(values["metadata"], path="$.metadata")
    return params(**{name: None if value is False else value for name, value in values.items()})


def parse_none(response: Response) -> None:
    return None


def get_call(
    path: str, parse: Callable[[Response], T], query: list[tuple[str, str]] | None = None
) -> Call[T]:
    """GET `path` with the `query` that `params` or `list_params` built: a read, so always safe to retry."""
    return Call("GET", path, parse, params=query or [], idempotent=True)


def delete_call(path: str, *, user_id: str | None = None) -> Call[None]:
    """DELETE `path`: idempotent, and a 404 answering a retry means the first attempt deleted it."""
    return Call(
        "DELETE",
        path,
        parse_none,
        params=params(user_id=user_id),
        idempotent=True,
        done_on_retry=frozenset({404}),
    )


def parse_json(response: Response) -> Any:
    return response.body


def parse_checkpoint(response: Response) -> Checkpoint:
    """A checkpoint with its payload, re-hashed here: a mismatch raises ChecksumMismatch."""
    return Checkpoint.from_dict(response.body).verify()


def parse_checkpoint_page(response: Response) -> Page[Checkpoint]:
    return Page.parse(response.body, lambda row: Checkpoint.from_dict(row).verify())


# --- methods ------------------------------------------------------------------------------------------------


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
        self._plan = plan
        self._describe(plan, _public_signature(plan, drop_first=True))

    def _describe(self, source: Callable[..., Any], signature: inspect.Signature) -> None:
        self.source = source
        self.__name__ = source.__name__
        self.__doc__ = source.__doc__
        self.signature = signature

    def plan(self, client: Any, *args: P.args, **kwargs: P.kwargs) -> Plan[T]:
        """What the method does with these arguments, for `client` to execute."""
        return self._plan(client, *args, **kwargs)

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
        functools.update_wrapper(method, self.source)
        method.__signature__ = self.signature  # type: ignore[attr-defined]
        return method


Remember = Literal["seen", "head"]


class request(endpoint[P, T]):
    """A client method that is one request builder (or a flow needing nothing of the client), bound with the
    builder's own signature and docstring. `remember`: the checkpoint answered is noted in the client's
    memory ("seen": its step; "head": also the namespace's head), so later saves need not ask for it."""

    def __init__(self, build: Callable[P, Plan[T]], *, remember: Remember | None = None) -> None:
        self._build = build
        self._remember = remember
        self._describe(build, _public_signature(build, drop_first=False))

    def plan(self, client: Any, *args: P.args, **kwargs: P.kwargs) -> Plan[T]:
        plan = self._build(*args, **kwargs)
        if self._remember is None or not isinstance(plan, Call):
            return plan
        return cast(
            Plan[T],
            flows.restore(cast(Call[Checkpoint], plan), client.memory, is_head=self._remember == "head"),
        )


def _public_signature(source: Callable[..., Any], *, drop_first: bool) -> inspect.Signature:
    """The signature as callers see it: without `self`, returning the plan's result type."""
    signature = inspect.signature(source)
    annotation = _PLAN_ANNOTATION.match(str(signature.return_annotation))
    return signature.replace(
        parameters=list(signature.parameters.values())[1 if drop_first else 0 :],
        return_annotation=annotation["result"] if annotation else inspect.Signature.empty,
    )


# --- what both clients set up alike -------------------------------------------------------------------------


class ClientSetup(Generic[HttpT]):
    """The construction both clients share; the transport type (blocking or async) is the one difference."""

    _transport_type: Callable[..., Any]

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        limits: httpx.Limits = DEFAULT_LIMITS,
        http_client: HttpT | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.transport = self._transport_type(
            self.base_url, api_key, timeout=timeout, retry=retry, limits=limits, http_client=http_client
        )
        self.memory = flows.ClientMemory(self.transport.clock)

    @classmethod
    def from_env(cls, **options: Any) -> Self:
        """A client for `CAIRN_URL` (default http://127.0.0.1:8000) with the key in `CAIRN_API_KEY`."""
        return cls(
            os.environ.get("CAIRN_URL", "http://127.0.0.1:8000"), os.environ["CAIRN_API_KEY"], **options
        )
