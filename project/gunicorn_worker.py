"""The Procfile's gunicorn worker: reads each request in full before a thread runs Django.

Gunicorn's sync worker (and its threaded worker) hand a connection to Django as soon as the request's head
has arrived; Django then blocks reading the body. A client that announces a body and stalls holds the process
(or the thread) for as long as it likes, and a few dozen of them deny service to everyone. This worker reads
every request in its event loop instead, where a stalled one costs a file descriptor and no thread, and
submits it to the thread pool only once it is complete (`project/http_framing.py` says when); bodies over
1 MiB are spooled to a temporary file. Django then runs exactly as under gunicorn's threaded worker: WSGI, one
request per thread, the thread's own database connection. See docs/operating.md.

A request that has not arrived in full within `CAIRN_REQUEST_READ_TIMEOUT_SECONDS` of its connection becoming
ready for it is answered 408 and its connection closed; a request the framing refuses (a head over 64 KiB, a
body over the limit, ...) is answered by the loop at once, without a thread. The thread never waits for a
client either: it sends what the socket takes without blocking and leaves the rest of the response to the
loop (`ResponseOutput`), which closes a connection whose response is not taken in full within the same
deadline. HTTP/1.1 only, without TLS (terminate TLS in front: docs/operating.md). See
docs/architecture.md, "Slow and hostile clients".
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import selectors
import socket
import time
from collections import deque
from concurrent.futures import Future
from functools import partial
from tempfile import SpooledTemporaryFile
from typing import Any

from django.conf import settings
from gunicorn.http import errors as http_errors
from gunicorn.http.parser import RequestParser
from gunicorn.workers.gthread import TConn, ThreadWorker

from project.http_framing import Refusal, RequestFraming

SPOOL_MEMORY_BYTES = 1024 * 1024  # a body over this waits in a temporary file, not in memory
RECV_BYTES = 64 * 1024
MAX_READ_PER_EVENT = 1024 * 1024  # then the loop serves other connections before reading more of this one
LINGER_SECONDS = 2.0  # after a refusal, how long the loop reads and drops what the client still sends
# Requests gunicorn's parser refuses as malformed (400); a bad header the application sent is not one.
MALFORMED = (
    http_errors.InvalidRequestLine, http_errors.InvalidRequestMethod, http_errors.InvalidHTTPVersion,
    http_errors.InvalidHeader, http_errors.InvalidHeaderName, http_errors.ObsoleteFolding,
    http_errors.InvalidSchemeHeaders, http_errors.InvalidProxyLine, http_errors.InvalidChunkSize,
    http_errors.ChunkMissingTerminator, http_errors.InvalidChunkExtension,
)  # fmt: skip
RESPONSE_HEADER_ERRORS = (http_errors.InvalidResponseHeader, http_errors.InvalidResponseHeaderName)
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# The worker reads its limits from Django's settings, whichever WSGI application it serves.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")


class SpooledSource:
    """What gunicorn's parser reads from (it calls `recv`): the bytes the event loop received, in order. Only
    if the parser wants more than the framing counted does it read the socket itself, bounded by the read
    timeout; `bypassed` then records that the loop no longer knows where the next request starts."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock = sock
        self.timeout = timeout
        self.bypassed = False
        self._spool = self._new_spool()
        self._read_at = 0
        self._written = 0

    @staticmethod
    def _new_spool() -> SpooledTemporaryFile[bytes]:
        return SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)  # closed by close()

    @property
    def pending(self) -> bool:
        return self._read_at < self._written

    def append(self, data: bytes) -> None:
        if not self.pending and self._written:
            self._spool.close()  # everything was read: start again in memory
            self._spool, self._read_at, self._written = self._new_spool(), 0, 0
        self._spool.seek(self._written)
        self._spool.write(data)
        self._written += len(data)

    def recv(self, size: int) -> bytes:
        if self.pending:
            self._spool.seek(self._read_at)
            data = self._spool.read(min(size, self._written - self._read_at))
            self._read_at += len(data)
            return data
        self.bypassed = True
        previous = self.sock.gettimeout()
        self.sock.settimeout(self.timeout if previous is None else previous)
        try:
            return self.sock.recv(size)
        finally:
            self.sock.settimeout(previous)

    # Gunicorn bounds its drain of an unread body with these.
    def gettimeout(self) -> float | None:
        return self.sock.gettimeout()

    def settimeout(self, timeout: float | None) -> None:
        self.sock.settimeout(timeout)

    def close(self) -> None:
        self._spool.close()


class ResponseOutput:
    """What the thread writes a response to, in place of the socket (gunicorn's `Response` calls `sendall`).
    It sends what the socket takes without waiting; the rest waits in `backlog` for the event loop, so a
    client that does not read holds memory for the response, never a thread. Everything else is the
    socket's."""

    def __init__(self, sock: socket.socket, *, continue_sent: bool) -> None:
        self.sock = sock
        self.continue_sent = continue_sent
        self.backlog: deque[memoryview] = deque()

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data if isinstance(data, bytes) else bytes(data))
        if not self.backlog:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                while view:
                    view = view[self.sock.send(view, socket.MSG_DONTWAIT) :]
        if view:
            self.backlog.append(view)

    def send(self, data: bytes) -> int:
        if data == CONTINUE and self.continue_sent:
            self.continue_sent = False  # the loop sent it already; a second one would confuse clients
        else:
            self.sendall(data)
        return len(data)

    def sendfile(self, file: Any, offset: int = 0, count: int | None = None) -> int:
        file.seek(offset)
        sent = 0
        while count is None or sent < count:
            data = file.read(RECV_BYTES if count is None else min(RECV_BYTES, count - sent))
            if not data:
                break
            self.sendall(data)
            sent += len(data)
        return sent

    def flush(self) -> bool:
        """Send what the socket takes now (the loop calls this when it is writable); True once all is sent."""
        while self.backlog:
            try:
                sent = self.sock.send(self.backlog[0], socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return False
            if sent == len(self.backlog[0]):
                self.backlog.popleft()
            else:
                self.backlog[0] = self.backlog[0][sent:]
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class BufferedConn(TConn):
    initialized: bool  # set by gunicorn's TConn

    def __init__(
        self, cfg: Any, sock: socket.socket, client: Any, server: Any, worker: BufferingWorker
    ) -> None:
        super().__init__(cfg, sock, client, server)
        self.source = SpooledSource(sock, worker.read_timeout)
        self.framing = RequestFraming(max_body_bytes=worker.max_body_bytes)
        self.deadline: float | None = None  # when the request being read (or the response) must be through
        self.continue_sent = False
        self.output: ResponseOutput | None = None  # the response the loop is still sending
        self.lingering = False  # refused: the loop drops what the client still sends, then closes
        self.data_ready = True  # gunicorn's wait for a first byte in the thread: the request is here already

    def init(self) -> None:
        if not self.initialized:
            self.initialized = True
            self.sock.setblocking(True)
            self.parser = RequestParser(self.cfg, self.source, self.client)

    def close(self, graceful: bool = False) -> None:
        super().close(graceful)
        self.source.close()


class BufferingWorker(ThreadWorker):
    """Gunicorn's threaded worker (`--threads` per process), with requests read in full by the event loop."""

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        super().check_config(cfg, log)
        if cfg.is_ssl:
            raise RuntimeError("BufferingWorker serves plain HTTP/1.1: terminate TLS in front of it")

    def run(self) -> None:
        # Django is set up by now (gunicorn loads the application before run()).
        self.read_timeout = float(settings.CAIRN_REQUEST_READ_TIMEOUT_SECONDS)
        self.max_body_bytes = int(settings.CAIRN_MAX_BODY_BYTES)
        # Connections the loop reads a request from (or lingers on after a refusal), or sends a response to.
        self.reading: dict[BufferedConn, None] = {}
        self.writing: dict[BufferedConn, Future[Any]] = {}
        # Connections whose next (pipelined) request is here in full: they get a thread after the connections
        # waiting to be accepted, so a client pipelining many requests cannot keep newcomers out.
        self.turns: deque[BufferedConn] = deque()
        self.busy = 0  # requests submitted to the thread pool and not finished
        super().run()

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        # With a thread free, the listener is polled (without waiting) before a pipelined request gets it.
        turn = bool(self.turns) and self.busy < self.cfg.threads
        super().wait_for_and_dispatch_events(0.0 if turn else timeout)
        while turn and self.turns and self.busy < self.cfg.threads:
            self.enqueue_req(self.turns.popleft())

    def set_accept_enabled(self, enabled: bool) -> None:
        # A process whose threads are all busy leaves new connections to the other processes (as a sync worker
        # does): otherwise it would read requests that then wait behind a slow one while other processes idle.
        # Gunicorn's loop calls this again on every wake-up, so accepting resumes when a thread is free.
        super().set_accept_enabled(enabled and self.busy < self.cfg.threads)

    def accept(self, listener: socket.socket) -> None:
        try:
            sock, client = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        self.enqueue_req(BufferedConn(self.cfg, sock, client, listener.getsockname(), self))

    def enqueue_req(self, conn: BufferedConn) -> None:
        """Every path to a thread comes here (a new connection, a kept-alive one with data, a pipelined
        request): submit the next request once it has arrived in full, else read it in the loop first."""
        if not conn.framing.ready:
            conn.sock.setblocking(False)
            conn.deadline = conn.deadline or time.monotonic() + self.read_timeout
            if not self._receive(conn):
                return self._close(conn)
        if conn.framing.ready == 1 and conn.framing.refusal is not None:
            return self._refuse(conn, conn.framing.refusal)
        if conn.framing.ready:
            conn.framing.ready -= 1
            conn.deadline = None
            self.busy += 1
            super().enqueue_req(conn)
            self.set_accept_enabled(self.nr_conns < self.worker_connections)
        elif conn not in self.reading:
            self.reading[conn] = None
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))
        return None

    def _refuse(self, conn: BufferedConn, refusal: Refusal) -> None:
        """Answer a request the framing refused, then read and drop what the client still sends for a moment
        before closing (closing at once with unread data would reset the connection, and the client would
        likely lose the answer)."""
        self._send_quietly(
            conn,
            error_response(refusal.status, refusal.reason, refusal.code, refusal.message, refusal.details),
        )
        self._linger(conn)

    def _linger(self, conn: BufferedConn) -> None:
        """Close gracefully without blocking the loop (gunicorn's graceful close waits in the loop)."""
        try:
            conn.sock.setblocking(False)
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            return self._close(conn)
        conn.lingering = True
        conn.deadline = time.monotonic() + LINGER_SECONDS
        if conn not in self.reading:
            self.reading[conn] = None
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))
        return None

    def _on_readable(self, conn: BufferedConn, _sock: socket.socket) -> None:
        if conn.lingering:
            if not _drop_input(conn.sock):
                self._stop_reading(conn)
                self._close(conn)
            return
        if not self._receive(conn):
            self._stop_reading(conn)
            self._close(conn)
        elif conn.framing.ready:
            self._stop_reading(conn)
            self.enqueue_req(conn)

    def _receive(self, conn: BufferedConn) -> bool:
        """Read what the socket holds, up to a complete request; False once the client has gone."""
        received = 0
        while received < MAX_READ_PER_EVENT and not conn.framing.ready:
            try:
                data = conn.sock.recv(RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                return False
            if not data:
                return False
            received += len(data)
            conn.source.append(data)
            conn.framing.feed(data)
        if conn.framing.continue_expected and not conn.framing.ready:
            # The client waits for this before sending its body. Behind a pipelined request it is sent once
            # that request's response has gone (a 1xx cannot overtake a response): the loop reads this
            # connection again, and comes here, only then.
            conn.framing.continue_expected = False
            conn.continue_sent = self._send_quietly(conn, CONTINUE)
        return True

    def _stop_reading(self, conn: BufferedConn) -> None:
        del self.reading[conn]
        self.poller.unregister(conn.sock)

    def _close(self, conn: BufferedConn) -> None:
        self.nr_conns -= 1
        conn.close()

    @staticmethod
    def _send_quietly(conn: BufferedConn, data: bytes) -> bool:
        try:
            return conn.sock.send(data) == len(data)
        except OSError:
            return False

    def murder_keepalived(self, force: bool = False) -> None:
        """Close idle kept-alive connections past `--keep-alive`, except one whose next request has arrived
        since the loop last polled: closing it would drop that request unanswered."""
        if not force:
            now = time.monotonic()
            expired = list(itertools.takewhile(lambda conn: conn.timeout <= now, self.keepalived_conns))
            for conn in expired:
                if _has_data(conn.sock):
                    self.on_client_socket_readable(conn, conn.sock)
        super().murder_keepalived(force)

    def murder_pending(self) -> None:
        """Close connections whose request is late (408) or whose response is not taken in time, those done
        lingering, and, when stopping, those not into a request."""
        super().murder_pending()
        now = time.monotonic()
        for conn in [conn for conn in self.reading if conn.deadline is not None and conn.deadline <= now]:
            self._stop_reading(conn)
            if conn.framing.in_request and not conn.lingering:
                self._send_quietly(conn, self._timeout_response())
            self._close(conn)
        for conn in [conn for conn in self.writing if conn.deadline is not None and conn.deadline <= now]:
            self._stop_writing(conn)
            self._close(conn)
        if not self.alive:
            for conn in [conn for conn in self.reading if not conn.framing.in_request]:
                self._stop_reading(conn)
                self._close(conn)

    def _timeout_response(self) -> bytes:
        seconds = int(self.read_timeout) if self.read_timeout.is_integer() else self.read_timeout
        message = f"The request was not received in full within {seconds} s."
        return error_response(
            408, "Request Timeout", "request_timeout", message, {"timeout_seconds": seconds}
        )

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """A request the parser refuses is answered in the API's error envelope, not gunicorn's HTML page."""
        if isinstance(exc, http_errors.LimitRequestLine):
            response = error_response(414, "URI Too Long", "uri_too_long", "The request line is too long.")
        elif isinstance(exc, http_errors.LimitRequestHeaders):
            message = "Too many header fields, or one too large."
            response = error_response(
                431, "Request Header Fields Too Large", "header_fields_too_large", message
            )
        elif isinstance(exc, MALFORMED) and not isinstance(exc, RESPONSE_HEADER_ERRORS):
            response = error_response(400, "Bad Request", "bad_request", f"Malformed HTTP request: {exc}")
        else:  # the application's fault, or a status of gunicorn's own (417, 501): gunicorn answers
            super().handle_error(req, client, addr, exc)
            return
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        with contextlib.suppress(OSError):
            client.sendall(response)

    def handle(self, conn: BufferedConn) -> Any:
        """Runs in a thread: the request is here in full; the response goes to a `ResponseOutput`."""
        socket_ = conn.sock
        conn.output = ResponseOutput(socket_, continue_sent=conn.continue_sent)
        conn.continue_sent = False
        conn.sock = conn.output  # everything but sending is the socket's
        try:
            keep_alive = super().handle(conn)
        finally:
            conn.sock = socket_
        # After a request the framing could not follow, or one the parser read past, where the next request
        # starts is unknown: close.
        return keep_alive and not conn.framing.opaque and not conn.source.bypassed

    def finish_request(self, conn: BufferedConn, fs: Future[Any]) -> None:
        self.busy -= 1
        if conn.output is not None and conn.output.backlog:
            # The client has not taken the whole response yet: the loop sends the rest, within the deadline.
            try:
                conn.sock.setblocking(False)
                self.poller.register(conn.sock, selectors.EVENT_WRITE, partial(self._on_writable, conn))
            except (OSError, ValueError):  # the thread closed the connection (a failed response)
                return self._close(conn)
            conn.deadline = time.monotonic() + self.read_timeout
            self.writing[conn] = fs
            return None
        return self._after_response(conn, fs)

    def _on_writable(self, conn: BufferedConn, _sock: socket.socket) -> None:
        assert conn.output is not None
        try:
            done = conn.output.flush()
        except OSError:
            self._stop_writing(conn)
            return self._close(conn)
        if done:
            self._after_response(conn, self._stop_writing(conn))
        return None

    def _stop_writing(self, conn: BufferedConn) -> Future[Any]:
        self.poller.unregister(conn.sock)
        conn.deadline = None
        return self.writing.pop(conn)

    def _after_response(self, conn: BufferedConn, fs: Future[Any]) -> None:
        conn.output = None
        keep_alive = not fs.cancelled() and fs.exception() is None and bool(fs.result())
        if keep_alive and conn.framing.ready:
            # The next request (pipelined) is here in full: it waits for its turn (the socket will not wake
            # the poller for it).
            self.turns.append(conn)
        elif keep_alive and conn.source.pending:
            self.enqueue_req(conn)  # part of the next request is here: read the rest in the loop
        elif keep_alive:
            super().finish_request(conn, fs)  # kept alive, in gunicorn's own poller
        elif conn.sock.fileno() < 0:
            self._close(conn)  # closed by the thread already
        else:
            self._linger(conn)


def _has_data(sock: socket.socket) -> bool:
    """Whether bytes wait to be read on `sock` (a non-blocking peek)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # nothing yet (EAGAIN), or the connection is broken: closing it is right
        return False


def _drop_input(sock: socket.socket) -> bool:
    """Read and drop what waits on `sock`; False once the client has closed (or the connection broke)."""
    try:
        return bool(sock.recv(RECV_BYTES, socket.MSG_DONTWAIT))
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False


def error_response(
    status: int, reason: str, code: str, message: str, details: dict[str, Any] | None = None
) -> bytes:
    """A whole HTTP response carrying the API's error envelope, for answers given before Django runs."""
    body = json.dumps({"error": {"code": code, "message": message, "details": details or {}}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nConnection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body
