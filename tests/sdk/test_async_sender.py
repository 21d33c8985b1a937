"""The async SDK's sender (aiohttp, checkpoints.sdk.aiohttp_sender) against a real peer on a socket: a small
asyncio server in the test's own event loop whose answers each test chooses, byte for byte. What is checked is
what Cairn adds to aiohttp: the requests it composes and the httpx errors its failures become."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from checkpoints.sdk import AsyncClient, RetryPolicy
from checkpoints.sdk.aiohttp_sender import AiohttpSender
from checkpoints.sdk.errors import CairnConnectionError
from checkpoints.sdk.transport import DEFAULT_LIMITS

JSON_OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}'


class Peer:
    """Answers each request with the next of `answers` (bytes, or None: close without answering); records
    request heads and bodies and counts connections."""

    def __init__(self, answers: list[bytes | None], *, close_after_each: bool = False) -> None:
        self.answers = answers
        self.close_after_each = close_after_each
        self.requests: list[tuple[str, bytes]] = []
        self.connections = 0
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.answers:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                length = next(
                    (
                        int(line.split(":")[1])
                        for line in head.split("\r\n")
                        if line.lower().startswith("content-length")
                    ),
                    0,
                )
                self.requests.append((head, await reader.readexactly(length)))
                answer = self.answers.pop(0)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if self.close_after_each or answer.startswith(b"HTTP/1.0"):
                    break
        except asyncio.IncompleteReadError:
            pass
        writer.close()


def run(peer: Peer, test: Callable[[str], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        server = await asyncio.start_server(peer.serve, "127.0.0.1", 0)
        peer.port = server.sockets[0].getsockname()[1]
        async with server:
            return await test(f"http://127.0.0.1:{peer.port}")

    return asyncio.run(main())


def sender(base_url: str, timeout: float = 5.0) -> AiohttpSender:
    return AiohttpSender(
        base_url=base_url, headers={"Authorization": "Bearer k"}, timeout=timeout, limits=DEFAULT_LIMITS
    )


def test_it_keeps_one_connection_for_consecutive_requests_and_sends_what_httpx_would() -> None:
    peer = Peer([JSON_OK] * 3)

    async def test(url: str) -> list[Any]:
        client = sender(url + "/prefix/")
        answers = [
            await client.request("GET", "/api/v1/x/", params=[("q", "a b"), ("n", "1")]),
            await client.request(
                "POST", "/api/v1/y/", content=b'{"a":1}', headers={"Content-Type": "application/json"}
            ),
            await client.request("GET", "/api/v1/z/"),
        ]
        await client.aclose()
        return [answer.json() for answer in answers]

    assert run(peer, test) == [{"ok": True}] * 3
    assert peer.connections == 1
    (first, _), (second, body), _ = peer.requests
    assert first.startswith("GET /prefix/api/v1/x/?q=a+b&n=1 HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{peer.port}\r\n" in first and "Authorization: Bearer k\r\n" in first
    assert second.startswith("POST /prefix/api/v1/y/ HTTP/1.1\r\n") and "Content-Length: 7\r\n" in second
    assert body == b'{"a":1}'


def test_it_reads_chunked_and_connection_delimited_bodies_and_skips_interim_answers() -> None:
    chunked = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4;ext=1\r\n[1, \r\n3\r\n2]\n\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    until_close = b"HTTP/1.0 201 Created\r\nContent-Type: application/json\r\n\r\n[3]"
    peer = Peer([chunked, until_close, JSON_OK])

    async def test(url: str) -> list[Any]:
        client = sender(url)
        answers = [await client.request("GET", "/a/") for _ in range(3)]
        await client.aclose()
        return [(answer.status_code, answer.json()) for answer in answers]

    assert run(peer, test) == [(200, [1, 2]), (201, [3]), (200, {"ok": True})]
    assert peer.connections == 2  # an HTTP/1.0 answer without a length ends its connection


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    peer = Peer([JSON_OK, JSON_OK], close_after_each=True)

    async def test(url: str) -> list[int]:
        client = sender(url)
        first = await client.request("GET", "/a/")
        await asyncio.sleep(0.05)  # the server's end of file arrives while the connection is idle
        second = await client.request("POST", "/a/", content=b"{}")  # not idempotent: must not be lost
        await client.aclose()
        return [first.status_code, second.status_code]

    assert run(peer, test) == [200, 200]
    assert peer.connections == 2


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (None, (httpx.RemoteProtocolError, httpx.ReadError)),  # closed without a word: sent, no answer
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", httpx.RemoteProtocolError),
        (b"NOT HTTP\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n", httpx.RemoteProtocolError),
    ],
)
def test_a_broken_answer_is_the_httpx_error_the_retry_policy_knows(
    answer: bytes | None, error: type | tuple[type, ...]
) -> None:
    peer = Peer([answer])

    async def test(url: str) -> None:
        client = sender(url)
        with pytest.raises(error):
            await client.request("GET", "/a/")
        await client.aclose()

    run(peer, test)


def test_a_server_that_does_not_answer_in_time_is_a_read_timeout() -> None:
    class Silent(Peer):
        async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            await asyncio.sleep(1)
            writer.close()

    async def test(url: str) -> None:
        client = sender(url, timeout=0.1)
        with pytest.raises(httpx.ReadTimeout):
            await client.request("GET", "/a/")
        await client.aclose()

    run(Silent([]), test)


def test_the_async_client_retries_a_refused_connection_then_says_so() -> None:
    async def test() -> None:
        retry = RetryPolicy(max_retries=2, backoff_base=0.001, backoff_max=0.002)
        async with AsyncClient("http://127.0.0.1:9", "k", retry=retry) as cairn:
            assert isinstance(cairn.transport.http, AiohttpSender)
            with pytest.raises(CairnConnectionError, match="ConnectError"):
                await cairn.checkpoint_save(thread_id="t", agent_id="a", state={})

    asyncio.run(test())


def test_a_proxy_in_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens: the proxy is what fails
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    async def test() -> None:
        retry = RetryPolicy(max_retries=0)
        async with AsyncClient("http://cairn.invalid:8000", "k", retry=retry) as cairn:
            with pytest.raises(CairnConnectionError, match=r"ConnectError.*127\.0\.0\.1:9"):
                await cairn.health()

    asyncio.run(test())
