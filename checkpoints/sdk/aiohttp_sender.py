"""How `AsyncTransport` sends its requests: aiohttp's client, whose failures are translated into the httpx
exceptions that the retry policy reads (`checkpoints.sdk.retry`), so both transports retry alike.

aiohttp rather than httpx's AsyncClient: httpx spends about 1.1 ms of CPU on a request, more than a
LangGraph step's own work; aiohttp about 0.2 ms (docs/architecture.md, "The SDK's HTTP clients").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.request import getproxies, proxy_bypass

import aiohttp
import httpx


@dataclass(frozen=True, slots=True)
class Answer:
    """A response read whole: what `transport._decode` reads from httpx's responses too."""

    status_code: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


def _timeout(timeout: httpx.Timeout) -> aiohttp.ClientTimeout:
    # aiohttp's `connect` includes the wait for a pooled connection, as httpx's pool timeout does.
    pool_and_connect = (timeout.pool or 0) + (timeout.connect or 0) or None
    return aiohttp.ClientTimeout(
        total=None, connect=pool_and_connect, sock_connect=timeout.connect, sock_read=timeout.read
    )


def _translated(exc: Exception) -> httpx.TransportError:
    """The httpx error that says the same: whether anything was sent decides what may be retried."""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(str(exc))
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ClientProxyConnectionError):
        return httpx.ConnectError(str(exc))
    if isinstance(exc, aiohttp.SocketTimeoutError | TimeoutError):
        return httpx.ReadTimeout(str(exc))
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return httpx.RemoteProtocolError(str(exc))
    if isinstance(exc, aiohttp.ClientResponseError):  # a malformed status line or header
        return httpx.RemoteProtocolError(str(exc))
    return httpx.ReadError(str(exc) or type(exc).__name__)


def environment_proxy(base_url: str) -> str | None:
    """The proxy the environment names for `base_url` (`HTTP_PROXY`, `NO_PROXY`, ...), read once: aiohttp's
    `trust_env` reads it again on every request, which costs more than the request itself."""
    url = httpx.URL(base_url)
    proxies = getproxies()
    if proxy_bypass(url.host):
        return None
    return proxies.get(url.scheme) or proxies.get("all")


class AiohttpSender:
    """Pooled keep-alive connections of one event loop (aiohttp's session belongs to the loop it runs in)."""

    def __init__(
        self, *, base_url: str, headers: dict[str, str], timeout: float | httpx.Timeout, limits: httpx.Limits
    ) -> None:
        self.base_url = base_url.rstrip("/")
        connector = aiohttp.TCPConnector(
            limit=limits.max_connections or 0, keepalive_timeout=limits.keepalive_expiry or 15.0
        )
        self.session = aiohttp.ClientSession(
            connector=connector,
            headers=headers,
            timeout=_timeout(httpx.Timeout(timeout)),
            proxy=environment_proxy(self.base_url),
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: list[tuple[str, str]] | None = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        try:
            async with self.session.request(
                method, self.base_url + url, params=params, data=content, headers=headers
            ) as response:
                body = await response.read()
                return Answer(response.status, dict(response.headers), body)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _translated(exc) from exc

    async def aclose(self) -> None:
        await self.session.close()
