"""HTTP/1.1 request framing on a byte stream: where each request (head and body) ends, without parsing more.

The buffering gunicorn worker (`project/gunicorn_worker.py`) feeds it every byte a connection sends and hands
a request to a thread only once the framing says it is complete. Gunicorn's own parser still parses it; this
only has to agree with it on lengths. Anything it cannot frame (a head or trailers too long, a chunk-size line
too long or invalid, an invalid or conflicting `Content-Length`, an unknown `Transfer-Encoding`, a body over
the limit) ends the framing as soon as it is seen (`opaque`) with the answer it gets (`refusal`): the worker
sends that answer itself, without a thread, and closes the connection (docs/architecture.md, "Slow and
hostile clients").
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

# Longer than gunicorn's default request line (4094) plus a generous header section; a head longer than this
# is handed over at once and refused by gunicorn.
MAX_HEAD_BYTES = 64 * 1024
MAX_CHUNK_LINE_BYTES = 1024
_CRLF2 = b"\r\n\r\n"
_DIGITS = re.compile(rb"[0-9]{1,19}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


@dataclass(frozen=True)
class Refusal:
    """The answer to a request that cannot be framed, in the API's error envelope."""

    status: int
    reason: str
    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


def _bad_request(message: str) -> Refusal:
    return Refusal(400, "Bad Request", "bad_request", message)


HEAD_TOO_LARGE = Refusal(
    431, "Request Header Fields Too Large", "header_fields_too_large",
    f"The request head is over {MAX_HEAD_BYTES} bytes.", {"max_bytes": MAX_HEAD_BYTES},
)  # fmt: skip
TRAILERS_TOO_LARGE = Refusal(
    431, "Request Header Fields Too Large", "header_fields_too_large",
    f"The chunked trailers are over {MAX_HEAD_BYTES} bytes.", {"max_bytes": MAX_HEAD_BYTES},
)  # fmt: skip
CHUNK_LINE_TOO_LONG = _bad_request(f"A chunk-size line is over {MAX_CHUNK_LINE_BYTES} bytes.")


def body_too_large(limit: int) -> Refusal:
    """The API's own 413 (checkpoints/api/middleware.py), for a body refused before it is read."""
    return Refusal(
        413, "Content Too Large", "payload_too_large", f"The body is larger than {limit} bytes.",
        {"max_bytes": limit},
    )  # fmt: skip


class _State(enum.Enum):
    HEAD = "head"
    BODY = "body"
    CHUNK_SIZE = "chunk size"
    CHUNK_DATA = "chunk data"
    TRAILERS = "trailers"
    OPAQUE = "opaque"


class RequestFraming:
    """Counts the complete requests fed so far (`ready`; the worker takes them one by one)."""

    def __init__(self, *, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes
        self.ready = 0
        self.refusal: Refusal | None = None  # set with `opaque`: the answer the last ready request gets
        self._state = _State.HEAD
        self._line = bytearray()  # the head, a chunk-size line or the trailers, as they arrive
        self._remaining = 0  # body or chunk bytes (chunk: with its CRLF) still to come
        self._body_bytes = 0
        # Set when a head asks for `100 Continue` before its body; the worker answers it and clears this.
        self.continue_expected = False

    @property
    def opaque(self) -> bool:
        """True once a request could not be framed: nothing after it can be trusted to start a request."""
        return self._state is _State.OPAQUE

    @property
    def in_request(self) -> bool:
        """True while part of a request has arrived but not all of it."""
        return self._state is not _State.HEAD or bool(self._line.strip(b"\r\n"))

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view and self._state is not _State.OPAQUE:
            if self._state in (_State.BODY, _State.CHUNK_DATA):
                taken = min(self._remaining, len(view))
                self._remaining -= taken
                view = view[taken:]
                if self._remaining == 0:
                    self._after_data()
            else:
                view = self._feed_line(view)

    def _feed_line(self, view: memoryview) -> memoryview:
        """Accumulate the head, a chunk-size line or trailers until their terminator; the rest of `view`."""
        terminator = b"\r\n" if self._state is _State.CHUNK_SIZE else _CRLF2
        start = max(0, len(self._line) - len(terminator) + 1)
        self._line += view
        if self._state is _State.TRAILERS and self._line.startswith(b"\r\n"):
            end = 0  # no trailers: the empty line right after the last chunk
            terminator = b"\r\n"
        else:
            end = self._line.find(terminator, start)
        limit = MAX_CHUNK_LINE_BYTES if self._state is _State.CHUNK_SIZE else MAX_HEAD_BYTES
        if end < 0:
            if len(self._line) > limit:
                self._give_up(self._too_long())
            return memoryview(b"")
        rest = self._line[end + len(terminator) :]
        line = bytes(self._line[:end])
        self._line = bytearray()
        if self._state is _State.HEAD:
            self._after_head(line)
        elif self._state is _State.CHUNK_SIZE:
            self._after_chunk_size(line)
        else:
            self._complete()
        return memoryview(bytes(rest))

    def _too_long(self) -> Refusal:
        if self._state is _State.CHUNK_SIZE:
            return CHUNK_LINE_TOO_LONG
        return TRAILERS_TOO_LARGE if self._state is _State.TRAILERS else HEAD_TOO_LARGE

    def _after_head(self, head: bytes) -> None:
        head = head.lstrip(b"\r\n")
        if not head:
            return  # empty lines between requests are ignored (RFC 9112 section 2.2)
        lengths: list[bytes] = []
        codings: list[bytes] = []
        request_line, *fields = head.split(b"\r\n")
        expect_continue = False
        for line in fields:
            name, _, value = line.partition(b":")
            name = name.lower()
            if name == b"content-length":
                lengths.append(value.strip())
            elif name == b"transfer-encoding":
                codings.extend(coding.strip().lower() for coding in value.split(b","))
            elif name == b"expect":
                expect_continue = value.strip().lower() == b"100-continue"
        # HTTP/1.0 clients never wait for it (RFC 9110 section 10.1.1).
        self.continue_expected = expect_continue and request_line.endswith(b"HTTP/1.1")
        if codings:
            if lengths:
                return self._give_up(_bad_request("Both Content-Length and Transfer-Encoding are set."))
            if codings[-1] != b"chunked":
                return self._give_up(_bad_request("The last transfer coding is not chunked."))
            self._body_bytes = 0
            self._state = _State.CHUNK_SIZE
        elif lengths:
            if len(set(lengths)) != 1 or not _DIGITS.fullmatch(lengths[0]):
                return self._give_up(_bad_request("Content-Length is invalid or given twice."))
            length = int(lengths[0])
            if length > self.max_body_bytes:
                return self._give_up(body_too_large(self.max_body_bytes))
            self._remaining = length
            self._state = _State.BODY
            if length == 0:
                self._complete()
        else:
            self._complete()
        if self._state is _State.HEAD:
            self.continue_expected = False  # complete already: no body to wait for
        return None

    def _after_chunk_size(self, line: bytes) -> None:
        size = line.partition(b";")[0].strip()
        if not _HEX.fullmatch(size):
            return self._give_up(_bad_request("A chunk size is not a hexadecimal number."))
        length = int(size, 16)
        self._body_bytes += length
        if self._body_bytes > self.max_body_bytes:
            return self._give_up(body_too_large(self.max_body_bytes))
        if length == 0:
            self._state = _State.TRAILERS
        else:
            self._remaining = length + 2  # the data and its CRLF
            self._state = _State.CHUNK_DATA
        return None

    def _after_data(self) -> None:
        if self._state is _State.CHUNK_DATA:
            self._state = _State.CHUNK_SIZE
        else:
            self._complete()

    def _complete(self) -> None:
        self.ready += 1
        self._state = _State.HEAD
        self.continue_expected = False  # the request that asked for it has arrived in full

    def _give_up(self, refusal: Refusal) -> None:
        self.ready += 1
        self.refusal = refusal
        self.continue_expected = False
        self._state = _State.OPAQUE
        self._line = bytearray()
