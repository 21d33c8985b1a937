"""HTTP transport for Client and AsyncClient: one request description (`Call`), one retry policy, and a sync
and an async sender that share both.

Retries (`checkpoints.sdk.retry`, the one policy: bounded, exponential backoff with full jitter):
- a connection that could not be made (nothing was sent) and a 429 (the throttle refuses before any work is
  done) are retried for every call;
- a connection lost or timed out after sending, and a 503, are retried only for idempotent calls: reads,
  deletes, and writes whose effect is the same when repeated (saves with a client-chosen id, PUT state with
  If-Match and a client-chosen id, pending writes, message appends with client-chosen ids, TTL changes);
- a `Retry-After` is honoured (up to `max_retry_after`, beyond which the error is raised at once).
A retried delete that finds the object already gone reports success (the first attempt did it).
"""

from __future__ import annotations

import asyncio
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

import httpx

from checkpoints.sdk.aiohttp_sender import AiohttpSender
from checkpoints.sdk.drive import Sleep, adrive, drive
from checkpoints.sdk.errors import CairnConnectionError, CairnError, error_from_response
from checkpoints.sdk.retry import RetryPolicy

T = TypeVar("T")
HttpT = TypeVar("HttpT", httpx.Client, httpx.AsyncClient)

SDK_VERSION = "0.1.0"
API_PREFIX = "/api/v1/"
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=60.0, write=60.0, pool=10.0)
DEFAULT_LIMITS = httpx.Limits(max_connections=20, max_keepalive_connections=10, keepalive_expiry=30.0)

# Errors raised before the request left this machine: safe to retry for any call.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Response:
    """What a `Call`'s parser receives: status, headers (lower-case keys) and the decoded JSON body."""

    status: int
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API request and how to read its answer (built in `checkpoints.sdk.endpoints`)."""

    method: str
    path: str
    parse: Callable[[Response], T]
    params: list[tuple[str, str]] = field(default_factory=list)
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotent: bool = False
    # Error statuses that mean "already done" when they answer a *retry* (e.g. 404 after a DELETE).
    done_on_retry: frozenset[int] = frozenset()
    # Error statuses whose body the parser reads instead of raising (e.g. /healthz's 503 report).
    accept_status: frozenset[int] = frozenset()


class ServerClock:
    """Tracks how far this machine's clock is ahead of the server's (from `Date` headers).

    The SDK sends `created_at` (it is part of the hashed record) and the server refuses timestamps in its
    future; a client whose clock runs fast would have every save refused, so it stamps with server time.
    """

    def __init__(self) -> None:
        self._ahead = timedelta(0)
        self._lock = threading.Lock()
        self._last_date: str | None = None

    def observe(self, headers: Mapping[str, str]) -> None:
        raw = headers.get("date")
        if not raw or raw == self._last_date:  # one-second resolution: most answers repeat the last one
            return
        self._last_date = raw
        try:
            server = parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return
        # Date has one-second resolution: only correct a clock that is clearly ahead.
        ahead = datetime.now(UTC) - server - timedelta(seconds=1)
        with self._lock:
            self._ahead = ahead if ahead > timedelta(seconds=2) else timedelta(0)

    def now(self) -> datetime:
        with self._lock:
            return datetime.now(UTC) - self._ahead


@dataclass(frozen=True)
class JSONText:
    """A body member already encoded as JSON (a checkpoint's canonical documents, `CheckpointDraft.body`):
    sent as it is, not encoded again."""

    text: str


_encode_json = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def encode_body(body: Any) -> bytes:
    """The request's JSON; an object's `JSONText` members are written as they are."""
    if type(body) is dict and any(type(value) is JSONText for value in body.values()):
        members = (
            f"{_encode_json(key)}:{value.text if type(value) is JSONText else _encode_json(value)}"
            for key, value in body.items()
        )
        return ("{" + ",".join(members) + "}").encode("utf-8")
    return _encode_json(body).encode("utf-8")


class Answer(Protocol):
    """What a sender hands back: an httpx.Response, or aiohttp's read whole (`sdk.aiohttp_sender`)."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> bytes: ...
    def json(self) -> Any: ...


def _decode(response: Answer) -> Response:
    headers = {key.lower(): value for key, value in response.headers.items()}
    body: Any = None
    if response.content:
        try:
            body = response.json()
        except ValueError:
            body = None
    return Response(status=response.status_code, headers=headers, body=body)


def _request_args(call: Call[Any]) -> dict[str, Any]:
    headers = dict(call.headers)
    content = None
    if call.body is not None:
        content = encode_body(call.body)
        headers["Content-Type"] = "application/json"
    return {
        "method": call.method,
        "url": API_PREFIX + call.path if not call.path.startswith("/") else call.path,
        "params": call.params or None,
        "content": content,
        "headers": headers,
    }


def _client_options(base_url: str, api_key: str, timeout: Any, limits: httpx.Limits) -> dict[str, Any]:
    return {
        "base_url": base_url.rstrip("/"),
        "headers": {
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "User-Agent": f"cairn-sdk/{SDK_VERSION}",
        },
        "timeout": timeout,
        "limits": limits,
    }


def _is_answer(call: Call[Any], response: Response, *, retried: bool) -> bool:
    if response.status < 400 or response.status in call.accept_status:
        return True
    return retried and response.status in call.done_on_retry


def _may_retry(call: Call[Any], exc: BaseException) -> bool:
    """Which failures are worth another attempt (the module's docstring): nothing sent, or refused by the
    throttle before any work, for every call; lost after sending, or a 503, for idempotent calls only."""
    if isinstance(exc, _NOT_SENT) or (isinstance(exc, CairnError) and exc.status == 429):
        return True
    lost = isinstance(exc, httpx.TransportError) or (isinstance(exc, CairnError) and exc.status == 503)
    return lost and call.idempotent


def _attempt(call: Call[T], clock: ServerClock, *, retried: bool) -> Generator[Call[T], Any, T]:
    """One attempt: yields the call to send (receives the answer, or has the transport error thrown in),
    returns the parsed answer or raises the call's CairnError."""
    raw: Answer = yield call
    response = _decode(raw)
    clock.observe(response.headers)
    if _is_answer(call, response, retried=retried):
        return call.parse(response)
    raise error_from_response(response.status, response.body, response.headers)


def _attempts(call: Call[T], retry: RetryPolicy, clock: ServerClock) -> Generator[Call[T] | Sleep, Any, T]:
    """One call's attempts and retries, written once for both transports (driven by checkpoints.sdk.drive):
    it yields the call to send or a `Sleep` before the next attempt; it returns the parsed answer or raises
    the call's CairnError.

    tenacity (`checkpoints.sdk.retry`) decides every retry; its waits are handed to the driver as `Sleep`s, so
    the async client waits without blocking its event loop. The first attempt is made before tenacity's loop
    starts, which then begins by judging that attempt's failure: its loop costs 30-60 us a call, more than
    the rest of the SDK's work on a small request (docs/sdk.md, "Retries")."""
    try:
        try:
            return (yield from _attempt(call, clock, retried=False))
        except Exception as exc:
            first: Exception | None = exc
        delays: list[float] = []
        for attempt in retry.retrying(partial(_may_retry, call), sleep=delays.append):
            if delays:
                yield Sleep(delays.pop())
            with attempt:
                if first is not None:
                    failure, first = first, None
                    raise failure
                return (yield from _attempt(call, clock, retried=True))
    except httpx.TransportError as exc:
        raise CairnConnectionError(f"{call.method} {call.path}: {exc!r}") from exc
    raise AssertionError("tenacity ends its loop only by returning an answer or raising")


class _Transport(ABC, Generic[HttpT]):
    """What both transports hold alike: the retry policy, the server's clock and the httpx client's options
    (base URL, key, timeout, pool limits); `_adopt` takes the caller's httpx client or makes one."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: Any = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        limits: httpx.Limits = DEFAULT_LIMITS,
        http_client: HttpT | None = None,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self.clock = ServerClock()
        self._options = _client_options(base_url, api_key, timeout, limits)
        self._adopt(http_client)

    @abstractmethod
    def _adopt(self, http_client: HttpT | None) -> None:
        """Use the caller's httpx client, or make one from `_options`."""


class SyncTransport(_Transport[httpx.Client]):
    """Sends Calls on a pooled `httpx.Client` (keep-alive connections are reused across calls)."""

    def _adopt(self, http_client: httpx.Client | None) -> None:
        self.http = http_client or httpx.Client(**self._options)

    def send(self, call: Call[T]) -> T:
        return drive(_attempts(call, self.retry, self.clock), self._request)

    def _request(self, call: Call[Any]) -> httpx.Response:
        return self.http.request(**_request_args(call))

    def close(self) -> None:
        self.http.close()


class AsyncTransport(_Transport[httpx.AsyncClient]):
    """Sends Calls on pooled keep-alive connections: aiohttp's (`checkpoints.sdk.aiohttp_sender`), or the
    caller's own httpx AsyncClient.

    Connections belong to the event loop that opened them, so a transport used from a new loop (a second
    `asyncio.run`) opens a fresh client for it instead of failing.
    """

    def _adopt(self, http_client: httpx.AsyncClient | None) -> None:
        self._http: httpx.AsyncClient | AiohttpSender | None = http_client
        self._loop: asyncio.AbstractEventLoop | None = None if http_client is None else _running_loop()

    @property
    def http(self) -> httpx.AsyncClient | AiohttpSender:
        loop = _running_loop()
        if self._http is None or (self._loop is not None and loop is not self._loop and loop is not None):
            self._http = AiohttpSender(**self._options)
            self._loop = loop
        return self._http

    async def send(self, call: Call[T]) -> T:
        return await adrive(_attempts(call, self.retry, self.clock), self._request)

    async def _request(self, call: Call[Any]) -> Answer:
        return await self.http.request(**_request_args(call))

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
