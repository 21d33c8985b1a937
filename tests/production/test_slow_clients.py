"""Slow clients against the Procfile's `web` command: uploads that announce a body and stall hold no worker,
so everyone else is served as usual, and they are answered 408 and closed once the read timeout passes. The
worker still serves every way a body legitimately arrives: in pieces, after `100 Continue`, chunked,
pipelined."""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from collections.abc import Iterator

import pytest

from checkpoints.bench.server import Gunicorn, Stack
from tests.production.conftest import api_client

pytestmark = pytest.mark.slow

STALLED = 60
READ_TIMEOUT_SECONDS = 4
PROMPT_SECONDS = 2.0  # per request: a round of three answers within three times this while uploads stall


@pytest.fixture(scope="module")
def key(production_stack: Stack) -> str:
    return production_stack.api_key("slow-clients", scopes="write")


@pytest.fixture(scope="module")
def web(production_stack: Stack) -> Iterator[Gunicorn]:
    stack = dataclasses.replace(
        production_stack, extra={"CAIRN_REQUEST_READ_TIMEOUT_SECONDS": str(READ_TIMEOUT_SECONDS)}
    )
    with Gunicorn(stack, workers=2) as server:
        yield server


def _connect(web: Gunicorn) -> socket.socket:
    return socket.create_connection(("127.0.0.1", web.port), timeout=READ_TIMEOUT_SECONDS + 5)


def _read_response(sock: socket.socket) -> tuple[bytes, dict[str, object]]:
    """One response with a Content-Length body: (status line and headers, JSON body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head, json.loads(body[:length])


def _save_request(thread: str, key: str, body: bytes, *extra_headers: bytes) -> bytes:
    headers = [
        f"POST /api/v1/threads/{thread}/checkpoints/ HTTP/1.1".encode(),
        b"Host: 127.0.0.1",
        f"Authorization: Bearer {key}".encode(),
        b"Content-Type: application/json",
        *extra_headers,
    ]
    return b"\r\n".join(headers) + b"\r\n\r\n" + body


def test_stalled_uploads_leave_the_service_answering_and_are_closed_after_the_read_timeout(
    web: Gunicorn, key: str
) -> None:
    # Authenticated saves, so that Django would wait for the body (an unauthenticated one is refused unread).
    stalled_head = _save_request("stalled", key, b"{", b"Content-Length: 100000")
    stalled = [_connect(web) for _ in range(STALLED)]
    for sock in stalled:
        sock.sendall(stalled_head)
    time.sleep(0.5)  # every head has arrived: with sync workers, every worker is now waiting for a body

    with api_client(web.url, key, timeout=PROMPT_SECONDS * 3) as client:
        for step in range(5):
            started = time.monotonic()
            health = client.get("/healthz")
            saved = client.post(
                "/api/v1/threads/busy/checkpoints/", json={"agent_id": "a", "state": {"n": step}}
            )
            state = client.get("/api/v1/threads/busy/state/")
            elapsed = time.monotonic() - started
            assert health.status_code == 200 and set(health.json().values()) == {"ok"}
            assert saved.status_code == 201 and saved.json()["state"] == {"n": step}
            assert state.json()["checkpoint_id"] == saved.json()["checkpoint_id"]
            assert elapsed < PROMPT_SECONDS * 3, f"three requests took {elapsed:.2f} s"

    # Still held (nothing answered yet), then answered 408 and closed once the read timeout has passed.
    for sock in stalled:
        sock.setblocking(False)
        with pytest.raises(BlockingIOError):
            sock.recv(1)
        sock.setblocking(True)
    for sock in stalled:
        head, body = _read_response(sock)
        assert head.startswith(b"HTTP/1.1 408 ")
        assert body["error"] == {
            "code": "request_timeout",
            "message": f"The request was not received in full within {READ_TIMEOUT_SECONDS} s.",
            "details": {"timeout_seconds": READ_TIMEOUT_SECONDS},
        }
        assert sock.recv(1) == b""  # closed by the server
        sock.close()


def test_a_body_arriving_in_pieces_within_the_timeout_is_saved(web: Gunicorn, key: str) -> None:
    body = json.dumps({"agent_id": "a", "state": {"text": "x" * 200_000}}).encode()
    request = _save_request("pieces", key, body, f"Content-Length: {len(body)}".encode())
    with _connect(web) as sock:
        for start in range(0, len(request), len(request) // 5 + 1):
            sock.sendall(request[start : start + len(request) // 5 + 1])
            time.sleep(0.2)
        head, saved = _read_response(sock)
    assert head.startswith(b"HTTP/1.1 201 ")
    assert saved["state"] == {"text": "x" * 200_000}


def test_a_client_waiting_for_100_continue_gets_exactly_one_and_is_served(web: Gunicorn, key: str) -> None:
    body = json.dumps({"agent_id": "a", "state": {"n": 1}}).encode()
    request = _save_request(
        "expect", key, b"", f"Content-Length: {len(body)}".encode(), b"Expect: 100-continue"
    )
    with _connect(web) as sock:
        sock.sendall(request)
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        head, saved = _read_response(sock)
    assert head.startswith(b"HTTP/1.1 201 ")  # not a second 100 Continue
    assert saved["state"] == {"n": 1}


def test_chunked_and_pipelined_requests_are_answered_in_order(web: Gunicorn, key: str) -> None:
    first = json.dumps({"agent_id": "a", "checkpoint_id": "c1", "state": {"n": 1}}).encode()
    second = json.dumps({"agent_id": "a", "checkpoint_id": "c2", "state": {"n": 2}}).encode()
    chunked = b"".join(f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (first[:10], first[10:]))
    pipelined = _save_request("chunked", key, chunked + b"0\r\n\r\n", b"Transfer-Encoding: chunked") + (
        _save_request("chunked", key, second, f"Content-Length: {len(second)}".encode())
    )
    with _connect(web) as sock:
        sock.sendall(pipelined)
        answers = [_read_response(sock) for _ in range(2)]
    assert [head.split(b"\r\n")[0] for head, _ in answers] == [b"HTTP/1.1 201 Created"] * 2
    assert [(body["checkpoint_id"], body["parent_id"]) for _, body in answers] == [("c1", None), ("c2", "c1")]


def test_a_client_that_stops_reading_its_response_is_cut_off_after_the_read_timeout(
    web: Gunicorn, key: str
) -> None:
    state = {"text": "x" * 8_000_000}  # more than the kernel buffers of both ends hold
    with api_client(web.url, key, timeout=60) as client:
        saved = client.post("/api/v1/threads/big/checkpoints/", json={"agent_id": "a", "state": state})
    assert saved.status_code == 201
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", web.port))
        path = f"/api/v1/threads/big/checkpoints/{saved.json()['checkpoint_id']}/"
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n\r\n".encode()
        )
        time.sleep(READ_TIMEOUT_SECONDS + 2)  # reads nothing: the server's write blocks, then gives up
        sock.settimeout(10)
        received = b""
        while chunk := sock.recv(1 << 20):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))[15:]
    )
    assert length > 8_000_000 and len(body) < length  # closed before the whole response was sent


@pytest.mark.parametrize(
    ("request_head", "status", "code"),
    [
        (b"GET /api/v1/threads/?limit=" + b"9" * 5000 + b" HTTP/1.1\r\nHost: x", 414, "uri_too_long"),
        (
            b"GET /api/v1/threads/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000,
            431,
            "header_fields_too_large",
        ),
        (b"GET /api/v1/threads/ HTTP/1.1\r\nHost: x\r\nBad Header: 1", 400, "bad_request"),
        (b"GET /api/v1/threads/ HTTP/9.9\r\nHost: x", 400, "bad_request"),
    ],
)
def test_a_request_the_server_cannot_parse_is_answered_in_the_error_envelope(
    web: Gunicorn, request_head: bytes, status: int, code: str
) -> None:
    with _connect(web) as sock:
        sock.sendall(request_head + b"\r\n\r\n")
        head, body = _read_response(sock)
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), head
    assert b"content-type: application/json" in head.lower()
    assert body["error"]["code"] == code, body  # type: ignore[index]
    assert body["error"]["message"]  # type: ignore[index]


def test_a_kept_alive_connection_idle_past_gunicorns_default_still_serves_the_next_request(
    web: Gunicorn, key: str
) -> None:
    # gunicorn's default keep-alive is 2 s; the Procfile's 75 s leaves closing an idle connection to clients.
    with api_client(web.url, key) as api:
        first = api.get("/api/v1/threads/?limit=1")
        time.sleep(3)
        second = api.get("/api/v1/threads/?limit=1")
    assert first.status_code == second.status_code == 200, (first.text, second.text)
    assert second.extensions["network_stream"] is first.extensions["network_stream"]  # the same connection
