"""The web worker's request framing (project/http_framing.py): a request counts as complete exactly when its
last byte has arrived, however the stream is cut into reads; what it cannot frame ends the framing at once,
with the answer the worker sends for it."""

from __future__ import annotations

import pytest

from project.http_framing import MAX_CHUNK_LINE_BYTES, MAX_HEAD_BYTES, RequestFraming

LIMIT = 1000


def _fed(*pieces: bytes) -> RequestFraming:
    framing = RequestFraming(max_body_bytes=LIMIT)
    for piece in pieces:
        framing.feed(piece)
    return framing


def _byte_by_byte(stream: bytes) -> list[int]:
    """`ready` after each byte."""
    framing = RequestFraming(max_body_bytes=LIMIT)
    counts = []
    for index in range(len(stream)):
        framing.feed(stream[index : index + 1])
        counts.append(framing.ready)
    return counts


GET = b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
POST = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
CHUNKED = b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nTrailer: t\r\n\r\n"
CHUNKED_NO_TRAILERS = b"POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"


@pytest.mark.parametrize("request_bytes", [GET, POST, CHUNKED, CHUNKED_NO_TRAILERS])
def test_a_request_is_complete_at_its_last_byte_and_not_before(request_bytes: bytes) -> None:
    counts = _byte_by_byte(request_bytes)
    assert counts == [0] * (len(request_bytes) - 1) + [1]
    assert not _fed(request_bytes).in_request and not _fed(request_bytes).opaque


def test_pipelined_requests_are_counted_one_by_one() -> None:
    stream = GET + b"\r\n" + POST + CHUNKED + GET
    framing = _fed(stream[:7], stream[7:200], stream[200:])
    assert framing.ready == 4 and not framing.in_request
    assert _byte_by_byte(stream)[len(GET) + 2 + len(POST) - 1] == 2


def test_a_stalled_upload_is_in_a_request_and_not_ready() -> None:
    framing = _fed(b"POST /x HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
    assert (framing.ready, framing.in_request, framing.opaque) == (0, True, False)
    assert _fed(b"GE").in_request and not _fed(b"\r\n").in_request


def test_a_client_expecting_100_continue_is_flagged_only_when_a_body_follows() -> None:
    head = b"POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
    assert _fed(head).continue_expected
    assert not _fed(head.replace(b"HTTP/1.1", b"HTTP/1.0")).continue_expected
    assert not _fed(head.replace(b"Content-Length: 5", b"Content-Length: 0")).continue_expected
    assert not _fed(
        head.replace(b"Content-Length: 5", b"Content-Length: 5000")
    ).continue_expected  # over limit


@pytest.mark.parametrize(
    ("unframeable", "status"),
    [
        (b"POST /x HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),  # conflicting
        (b"POST /x HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400),
        (b"POST /x HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),  # both
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400),  # not chunked last
        (b"POST /x HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413),  # over the body limit
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),  # not a chunk size
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n", 413),  # chunks over the limit
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1" + b"0" * MAX_CHUNK_LINE_BYTES, 400),
        (b"GET /" + b"a" * MAX_HEAD_BYTES, 431),  # a head that never ends
        (
            CHUNKED.partition(b"Trailer:")[0] + b"X-T: " + b"t" * MAX_HEAD_BYTES,
            431,
        ),  # trailers that never end
    ],
)
def test_what_cannot_be_framed_ends_the_framing_at_once_with_its_answer(
    unframeable: bytes, status: int
) -> None:
    framing = _fed(unframeable)
    assert (framing.ready, framing.opaque) == (1, True)
    assert framing.refusal is not None and framing.refusal.status == status
    assert framing.refusal.code and framing.refusal.message
    framing.feed(GET)
    assert framing.ready == 1  # nothing after it is trusted to be a request


def test_a_request_complete_with_its_body_needs_no_100_continue() -> None:
    head = b"POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
    assert not _fed(head + b"hello").continue_expected
    assert _fed(GET + head).continue_expected  # behind a complete request: still owed
