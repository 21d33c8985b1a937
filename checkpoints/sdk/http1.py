"""A lean HTTP/1.1 client on asyncio streams: what `AsyncTransport` sends its own requests with
(docs/sdk.md).

httpx's AsyncClient spends ~1.2 ms of CPU on a request (URL merging, cookies, anyio's stream checks), more
than a LangGraph step's own work; writing the request and reading the answer on asyncio streams costs
~0.2 ms. This client does what the SDK's calls need and no more: keep-alive connections (at most
`max_connections`, idle ones kept `keepalive_expiry` seconds), `Content-Length`, chunked and read-to-close
bodies, httpx's four timeouts, and TLS with httpx's own certificate defaults. Its failures are the httpx
exceptions the retry policy knows: ConnectError, ConnectTimeout and PoolTimeout mean nothing was sent.

`AsyncTransport` uses httpx instead where a proxy is configured in the environment (this client connects
directly) and where the caller passes an httpx client of its own.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode
from urllib.request import getproxies, proxy_bypass

import httpx

HEAD_LIMIT = 64 * 1024  # status line and headers of one response
_Answer = tuple[int, list[tuple[str, str]], bytes, bool]  # status, headers, body, keep the connection


def proxied(base_url: str) -> bool:
    """Whether the environment routes `base_url` through a proxy (as httpx would read it)."""
    url = httpx.URL(base_url)
    proxies = getproxies()
    return bool(proxies.get(url.scheme) or proxies.get("all")) and not proxy_bypass(url.host)


@dataclass(frozen=True, slots=True)
class Answer:
    """A response as the transport reads it (httpx.Response's names; headers lower-case, repeats joined)."""

    status_code: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


def _joined(headers: list[tuple[str, str]]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for name, value in headers:
        name = name.lower()
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def reusable(self, now: float, expiry: float | None) -> bool:
        """An idle connection the server has not closed (its end of file would have arrived meanwhile)."""
        fresh = expiry is None or now - self.idle_since < expiry
        return fresh and not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class LeanAsyncClient:
    """`request(method, url, params, content, headers)` like httpx.AsyncClient's, for one base URL."""

    def __init__(
        self,
        *,
        base_url: str,
        headers: Mapping[str, str],
        timeout: Any,
        limits: httpx.Limits,
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https"):
            raise ValueError(f"Not an HTTP URL: {base_url!r}")
        self._url = url
        self._tls = httpx.create_ssl_context() if url.scheme == "https" else None
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        host = url.netloc.decode("ascii")
        self._headers = "".join(f"{name}: {value}\r\n" for name, value in {"Host": host, **headers}.items())
        self._timeout = httpx.Timeout(timeout)
        self._expiry = limits.keepalive_expiry
        self._max_idle = limits.max_keepalive_connections
        self._slots = asyncio.Semaphore(limits.max_connections or 100)
        self._idle: list[_Connection] = []

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Sequence[tuple[str, str]] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        target = self._prefix + url + (f"?{urlencode(params, quote_via=quote)}" if params else "")
        head = f"{method} {target} HTTP/1.1\r\n{self._headers}"
        head += "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        if content is not None:
            head += f"Content-Length: {len(content)}\r\n"
        message = head.encode("utf-8") + b"\r\n" + (content or b"")
        try:
            async with asyncio.timeout(self._timeout.pool):
                await self._slots.acquire()
        except TimeoutError as exc:
            raise httpx.PoolTimeout("No connection was free in time.") from exc
        try:
            connection = self._reuse() or await self._connect()
            try:
                await self._send(connection, message)
                status, response_headers, body, keep_alive = await self._receive(connection, method)
            except BaseException:
                connection.close()
                raise
            self._release(connection, keep_alive)
        finally:
            self._slots.release()
        return Answer(status, _joined(response_headers), body)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _reuse(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable(now, self._expiry):
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection, keep_alive: bool) -> None:
        if keep_alive and (self._max_idle is None or len(self._idle) < self._max_idle):
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()

    async def _connect(self) -> _Connection:
        try:
            async with asyncio.timeout(self._timeout.connect):
                reader, writer = await asyncio.open_connection(
                    self._url.host, self._port, ssl=self._tls, limit=HEAD_LIMIT
                )
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"Connecting to {self._url.host}:{self._port} timed out.") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(f"Could not connect to {self._url.host}:{self._port}: {exc}") from exc
        return _Connection(reader, writer)

    async def _send(self, connection: _Connection, message: bytes) -> None:
        try:
            async with asyncio.timeout(self._timeout.write):
                connection.writer.write(message)
                await connection.writer.drain()
        except TimeoutError as exc:
            raise httpx.WriteTimeout("Sending the request timed out.") from exc
        except OSError as exc:
            raise httpx.WriteError(f"Sending the request failed: {exc}") from exc

    async def _receive(self, connection: _Connection, method: str) -> _Answer:
        try:
            async with asyncio.timeout(self._timeout.read):
                return await self._answer(connection.reader, method)
        except TimeoutError as exc:
            raise httpx.ReadTimeout("Reading the response timed out.") from exc
        except asyncio.IncompleteReadError as exc:
            message = "Server disconnected without sending a complete response."
            raise httpx.RemoteProtocolError(message) from exc
        except (asyncio.LimitOverrunError, ValueError) as exc:
            raise httpx.RemoteProtocolError(f"Malformed response: {exc}") from exc
        except OSError as exc:
            raise httpx.ReadError(f"Reading the response failed: {exc}") from exc

    async def _answer(self, reader: asyncio.StreamReader, method: str) -> _Answer:
        status, version, headers = await self._head(reader)
        while 100 <= status < 200:  # interim answers (103 Early Hints): the real one follows
            status, version, headers = await self._head(reader)
        fields = {name.lower(): value for name, value in headers}
        keep_alive = version == "HTTP/1.1" and "close" not in fields.get("connection", "").lower()
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            body = await self._chunked(reader)
        elif "content-length" in fields:
            body = await reader.readexactly(_length(fields["content-length"]))
        else:
            body, keep_alive = await reader.read(), False  # delimited by the connection's end
        return status, headers, body, keep_alive

    @staticmethod
    async def _head(reader: asyncio.StreamReader) -> tuple[int, str, list[tuple[str, str]]]:
        lines = (await reader.readuntil(b"\r\n\r\n"))[:-4].decode("latin-1").split("\r\n")
        version, status = lines[0].split(" ", 2)[:2]
        if not version.startswith("HTTP/1.") or not status.isdigit():
            raise ValueError(f"status line {lines[0]!r}")
        headers = []
        for line in lines[1:]:
            name, separator, value = line.partition(":")
            if not separator:
                raise ValueError(f"header line {line!r}")
            headers.append((name.strip(), value.strip()))
        return int(status), version, headers

    @staticmethod
    async def _chunked(reader: asyncio.StreamReader) -> bytes:
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return bytes(body)
            body += await reader.readexactly(size)
            if await reader.readexactly(2) != b"\r\n":
                raise ValueError("chunk without its line end")


def _length(raw: str) -> int:
    if not raw.isdigit():
        raise ValueError(f"Content-Length {raw!r}")
    return int(raw)
