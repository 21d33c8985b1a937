"""A chunked request body (no Content-Length) through Django's ASGI handler, as uvicorn or daphne hand one
over: read up to `CAIRN_MAX_BODY_BYTES` and handed on as a sized body, or refused with a 413 in the error
envelope. (The WSGI path, as gunicorn hands one over, is in test_hostile_inputs.py.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest
from django.core.handlers.asgi import ASGIHandler
from django.test import override_settings

from checkpoints.models import Checkpoint
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db(transaction=True)

CPS = "/api/v1/threads/t1/checkpoints/"


def post_chunked(path: str, secret: str, chunks: list[bytes]) -> tuple[int, Any]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"transfer-encoding", b"chunked"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {secret}".encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    messages = [
        {"type": "http.request", "body": chunk, "more_body": n < len(chunks) - 1}
        for n, chunk in enumerate(chunks)
    ]
    sent: list[Mapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if not messages:  # the client stays connected: Django stops listening once it has answered
            await asyncio.Event().wait()
        return messages.pop(0)

    async def send(message: Mapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(ASGIHandler()(scope, receive, send))
    body = b"".join(message.get("body", b"") for message in sent[1:])
    return sent[0]["status"], json.loads(body)


@override_settings(CAIRN_MAX_BODY_BYTES=1000)
def test_a_chunked_body_within_the_limit_is_read(api: ApiClient) -> None:
    body = json.dumps({"agent_id": "chunked-asgi", "state": {"n": 1}}).encode()
    status, answer = post_chunked(CPS, api.secret, [body[:10], body[10:]])
    assert status == 201, answer
    assert answer["agent_id"] == "chunked-asgi" and answer["state"] == {"n": 1}
    assert Checkpoint.objects.get().agent_id == "chunked-asgi"


@override_settings(CAIRN_MAX_BODY_BYTES=1000)
def test_a_chunked_body_over_the_limit_is_refused_in_the_envelope(api: ApiClient) -> None:
    body = json.dumps({"agent_id": "a", "state": {}, "pad": "x" * 5_000}).encode()
    status, answer = post_chunked(CPS, api.secret, [body[:3_000], body[3_000:]])
    assert status == 413
    assert answer["error"]["code"] == "payload_too_large" and answer["error"]["details"] == {
        "max_bytes": 1000
    }
    assert not Checkpoint.objects.exists()
