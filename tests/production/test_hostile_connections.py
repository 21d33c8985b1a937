"""Hostile connections against the Procfile's `web` command: eight of each kind open at once (unfinished
request heads, an endless chunk-size line, endless chunked trailers, a sign-in upload declaring more than
the body limit, clients that pipeline requests and never read the answers) leave health probes from other
clients answering within 5 s, and each hostile connection is answered 4xx or closed within the request
deadline (`CAIRN_REQUEST_READ_TIMEOUT_SECONDS`, shortened here; docs/operating.md gives the production
value). A client waiting for `100 Continue` behind a pipelined request gets it at once."""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from checkpoints.bench.server import Gunicorn, Stack

pytestmark = pytest.mark.slow

HOSTILE = 8
WORKERS = 2
DEADLINE_SECONDS = 5  # the request deadline the server is given
GRACE_SECONDS = 3.0  # for the server's loop to notice a passed deadline on a shared machine
PROBE_SECONDS = 5.0  # every health probe answers within this
PROBE_EVERY_SECONDS = 0.5
TRICKLE_EVERY_SECONDS = 1.0  # production's attacker adds a line every 20 s, under a 60 s deadline
PROMPT_SECONDS = 2.0
HEAD_BYTES = 70 * 1024


@pytest.fixture(scope="module")
def web(production_stack: Stack) -> Iterator[Gunicorn]:
    stack = dataclasses.replace(
        production_stack, extra={"CAIRN_REQUEST_READ_TIMEOUT_SECONDS": str(DEADLINE_SECONDS)}
    )
    with Gunicorn(stack, workers=WORKERS) as server:
        yield server


@pytest.fixture(scope="module")
def key(production_stack: Stack) -> str:
    return production_stack.api_key("hostile", scopes="write")


@dataclasses.dataclass
class Hostile:
    """One hostile connection: what it has received, and when the server answered or closed it."""

    sock: socket.socket
    opened: float
    received: bytes = b""
    resolved: float | None = None  # when a response head arrived or the connection was closed

    def poll(self) -> None:
        """Read what has arrived without blocking; note when the server answered or closed."""
        if self.resolved is not None:
            return
        try:
            while data := self.sock.recv(65536, socket.MSG_DONTWAIT):
                self.received += data
                if b"\r\n\r\n" in self.received:
                    self.resolved = time.monotonic()
                    return
            self.resolved = time.monotonic()  # closed by the server
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.resolved = time.monotonic()  # reset by the server

    def send(self, data: bytes) -> None:
        if self.resolved is None:
            try:
                self.sock.sendall(data)
            except OSError:
                self.resolved = time.monotonic()

    @property
    def status(self) -> int | None:
        line = self.received.partition(b"\r\n")[0].split()
        return int(line[1]) if len(line) > 1 and line[1].isdigit() else None


@dataclasses.dataclass
class Probes:
    """Health probes from another client, each on a fresh connection (as a load balancer's)."""

    url: str
    answers: list[tuple[int | str, float]] = dataclasses.field(default_factory=list)
    last: float = 0.0

    def maybe_probe(self) -> None:
        if time.monotonic() - self.last < PROBE_EVERY_SECONDS:
            return
        started = time.monotonic()
        try:
            status: int | str = httpx.get(f"{self.url}/healthz", timeout=PROBE_SECONDS).status_code
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        self.answers.append((status, time.monotonic() - started))
        self.last = time.monotonic()

    def assert_all_answered(self) -> None:
        assert len(self.answers) >= 3, self.answers
        late = [(status, round(took, 2)) for status, took in self.answers if status != 200 or took > 5]
        assert not late, f"{len(late)} of {len(self.answers)} probes failed or took over 5 s: {late}"


def _connect(web: Gunicorn, *, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", web.port))
    return sock


def _hold(
    web: Gunicorn, first: bytes, trickle: Callable[[int], bytes], *, receive_buffer: int | None = None
) -> tuple[list[Hostile], Probes]:
    """Open HOSTILE connections sending `first`, then `trickle(n)` on each every second, probing health all
    along, until the server has answered or closed every one or the deadline and its grace have passed."""
    hostile = []
    for _ in range(HOSTILE):
        sock = _connect(web, receive_buffer=receive_buffer)
        sock.sendall(first)
        hostile.append(Hostile(sock, time.monotonic()))
    probes = Probes(web.url)
    give_up = time.monotonic() + DEADLINE_SECONDS + GRACE_SECONDS
    next_trickle, step = time.monotonic() + TRICKLE_EVERY_SECONDS, 0
    while time.monotonic() < give_up and any(conn.resolved is None for conn in hostile):
        probes.maybe_probe()
        if time.monotonic() >= next_trickle:
            step += 1
            for conn in hostile:
                conn.send(trickle(step))
            next_trickle += TRICKLE_EVERY_SECONDS
        for conn in hostile:
            conn.poll()
        time.sleep(0.05)
    for _ in range(3):  # after the hostile ones are gone, too
        probes.last = 0.0
        probes.maybe_probe()
    return hostile, probes


def _assert_refused_or_closed_in_time(hostile: list[Hostile], statuses: set[int]) -> list[float]:
    took = [
        round(conn.resolved - conn.opened, 2) if conn.resolved is not None else float("inf")
        for conn in hostile
    ]
    print(f"statuses {[conn.status for conn in hostile]}, answered or closed after (s): {took}")  # with -s
    assert max(took) <= DEADLINE_SECONDS + GRACE_SECONDS, f"answered or closed after (s): {took}"
    for conn in hostile:
        if conn.received:  # an answer, not only a close
            assert conn.status in statuses, conn.received[:200]
            head, _, body = conn.received.partition(b"\r\n\r\n")
            assert b"content-type: application/json" in head.lower(), head
            if body.endswith(b"}"):
                assert json.loads(body)["error"]["code"], body
        conn.sock.close()
    return took


def _closing(hostile: list[Hostile]) -> None:
    for conn in hostile:
        conn.sock.close()


def _assert_no_worker_held(hostile: list[Hostile], probes: Probes, statuses: set[int]) -> None:
    """Every probe was answered, every hostile connection refused or closed in time; then all are closed."""
    try:
        probes.assert_all_answered()
        _assert_refused_or_closed_in_time(hostile, statuses)
    finally:
        _closing(hostile)


@pytest.mark.parametrize(
    ("head_bytes", "statuses"),
    [
        (HEAD_BYTES, {431}),  # over the server's head limit: refused at once
        (60 * 1024, {408}),  # under it, a line added every second: refused at the deadline, not after
    ],
)
def test_unfinished_large_request_heads_hold_no_worker(
    web: Gunicorn, head_bytes: int, statuses: set[int]
) -> None:
    line = b"X-Padding-%04d: " + b"a" * 1000 + b"\r\n"
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(
        line.replace(b"%04d", b"%04d" % n) for n in range(head_bytes // len(line) + 1)
    )
    assert len(head) > head_bytes - len(line) and not head.endswith(b"\r\n\r\n")
    hostile, probes = _hold(web, head, lambda n: b"X-More-%d: b\r\n" % n)
    try:
        probes.assert_all_answered()
        _assert_refused_or_closed_in_time(hostile, statuses)
        assert {conn.status for conn in hostile} == statuses
    finally:
        _closing(hostile)


def test_an_endless_chunk_size_line_holds_no_worker(web: Gunicorn, key: str) -> None:
    head = (
        b"POST /api/v1/threads/hostile/checkpoints/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Authorization: Bearer {key}\r\n".encode()
        + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    hostile, probes = _hold(web, head + b"1" + b"0" * 1999, lambda n: b"0")
    _assert_no_worker_held(hostile, probes, {400, 408, 413})


def test_endless_chunked_trailers_hold_no_worker(web: Gunicorn, key: str) -> None:
    body = b'{"agent_id": "a", "state": {}}'
    request = (
        b"POST /api/v1/threads/hostile/checkpoints/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Authorization: Bearer {key}\r\n".encode()
        + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"{len(body):x}\r\n".encode()
        + body
        + b"\r\n0\r\n"
        + b"".join(b"X-Trailer-%05d: %s\r\n" % (n, b"t" * 1000) for n in range(HEAD_BYTES // 1000 + 1))
    )
    hostile, probes = _hold(web, request, lambda n: b"X-More-%d: t\r\n" % n)
    _assert_no_worker_held(hostile, probes, {400, 408, 431})


@pytest.mark.parametrize("path", ["/dashboard/login/", "/admin/login/"])
def test_a_sign_in_upload_declaring_40_mb_holds_no_worker(web: Gunicorn, path: str) -> None:
    boundary = "hostileboundary"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: 40000000\r\n\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="username"\r\n\r\nadmin\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="upload"; filename="a.bin"\r\n\r\n'
    ).encode()
    hostile, probes = _hold(web, head, lambda n: b"x" * 100)
    _assert_no_worker_held(hostile, probes, {400, 408, 413})


def test_clients_that_pipeline_and_never_read_hold_no_worker(web: Gunicorn, key: str) -> None:
    request = f"GET /api/v1/schema/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n\r\n"
    with httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {key}"}) as client:
        one = client.get("/api/v1/schema/")
    assert one.status_code == 200 and len(one.content) > 10_000
    # `_hold` never reads these: it only probes health until the deadline and its grace have passed.
    hostile = []
    for _ in range(HOSTILE):
        sock = _connect(web, receive_buffer=4096)
        sock.sendall(request.encode() * 30)
        hostile.append(Hostile(sock, time.monotonic()))
    probes = Probes(web.url)
    try:
        done = time.monotonic() + DEADLINE_SECONDS + GRACE_SECONDS
        while time.monotonic() < done:
            probes.maybe_probe()
            time.sleep(0.05)
        probes.assert_all_answered()
        # Now read: each connection was cut off (a close or a reset after what was in flight), long before
        # thirty answers got through.
        for conn in hostile:
            conn.sock.settimeout(PROMPT_SECONDS)
            received, closed = 0, False
            try:
                while data := conn.sock.recv(1 << 20):
                    received += len(data)
                closed = True
            except ConnectionResetError:
                closed = True
            except TimeoutError:
                closed = False
            assert closed, f"still open after {DEADLINE_SECONDS + GRACE_SECONDS} s, {received} bytes read"
            assert received < 30 * len(one.content)
    finally:
        _closing(hostile)


def test_100_continue_pipelined_behind_another_request_is_answered_at_once(web: Gunicorn, key: str) -> None:
    body = json.dumps({"agent_id": "a", "state": {"n": 1}}).encode()
    first = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    second = (
        b"POST /api/v1/threads/continue/checkpoints/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n".encode()
        + f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode()
    )
    with _connect(web) as sock:
        sock.settimeout(PROMPT_SECONDS)
        sock.sendall(first + second)
        started, received = time.monotonic(), b""
        # The first answer (a JSON body), then `100 Continue` or the head of a final answer to the second.
        while received.count(b"HTTP/1.1 ") < 2 or b"\r\n\r\n" not in received.partition(b"}")[2]:
            try:
                received += sock.recv(65536)
            except TimeoutError:
                pytest.fail(f"nothing more within {PROMPT_SECONDS} s: {received!r}")
            assert time.monotonic() - started < PROMPT_SECONDS, received
        assert received.startswith(b"HTTP/1.1 200 OK\r\n"), received
        second_answer = received.partition(b"}")[2]
        if not second_answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"):
            # A final answer at once is allowed too (RFC 9110 section 10.1.1), if it is one.
            assert second_answer.startswith(b"HTTP/1.1 4"), second_answer
            return
        sock.settimeout(10)
        sock.sendall(body)
        answer = second_answer.removeprefix(b"HTTP/1.1 100 Continue\r\n\r\n")
        while not answer.endswith(b"}"):
            answer += sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 201 "), answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["state"] == {"n": 1}
