"""The floor: the least a checkpoint service over HTTP can do, as a WSGI app with no framework.

Served by the Procfile's own gunicorn command (`checkpoints.bench.server.procfile_web_argv`, only the app
differs), it does what a Cairn save or restore must do and nothing else:

- `POST /save/<thread>`: read the body, `json.loads` it, canonical-encode `state`, SHA-256 it, one
  autocommit `INSERT ... RETURNING id` into the raw table; 201 `{"id": ..., "checksum": ...}`.
- `GET /restore/<id>`: one primary-key `SELECT`, re-hash the stored text, compare with the stored checksum;
  200 with the stored text spliced into `{"id": ..., "checksum": ..., "state": <text>}`.
- `GET /healthz`: 200 (the benchmark waits for it).

One psycopg connection per worker process, opened by its first request. `DATABASE_URL` names the database.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import psycopg

from checkpoints.bench.saves import RAW_INSERT, RAW_SELECT
from checkpoints.integrity import canonical_json

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
_connection: psycopg.Connection[Any] | None = None


def _db() -> psycopg.Connection[Any]:
    global _connection
    if _connection is None or _connection.closed:
        _connection = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
    return _connection


def _answer(start_response: StartResponse, status: str, body: bytes, *extra: tuple[str, str]) -> list[bytes]:
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *extra])
    return [body]


def save(environ: dict[str, Any], start_response: StartResponse, thread_id: str) -> list[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    try:
        state = json.loads(environ["wsgi.input"].read(length))["state"]
        text = canonical_json(state)
    except (ValueError, KeyError, TypeError):
        return _answer(start_response, "400 Bad Request", b'{"error":"expected {\\"state\\": ...}"}')
    checksum = hashlib.sha256(text.encode("utf-8")).hexdigest()
    row = _db().execute(RAW_INSERT, (thread_id, uuid.uuid4().hex, text, checksum)).fetchone()
    assert row is not None
    body = json.dumps({"id": row[0], "checksum": checksum}).encode()
    return _answer(start_response, "201 Created", body)


def restore(start_response: StartResponse, pk: int) -> list[bytes]:
    row = _db().execute(RAW_SELECT, (pk,)).fetchone()
    if row is None:
        return _answer(start_response, "404 Not Found", b'{"error":"no such checkpoint"}')
    text, checksum = row
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != checksum:
        return _answer(start_response, "409 Conflict", b'{"error":"checksum mismatch"}')
    body = f'{{"id":{pk},"checksum":"{checksum}","state":{text}}}'.encode()
    return _answer(start_response, "200 OK", body, ("X-Checksum-Verified", "true"))


def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    method = environ["REQUEST_METHOD"]
    route, _, argument = environ.get("PATH_INFO", "").lstrip("/").partition("/")
    if method == "POST" and route == "save" and argument:
        return save(environ, start_response, argument)
    if method == "GET" and route == "restore" and argument.isdigit():
        return restore(start_response, int(argument))
    if method == "GET" and route == "healthz":
        return _answer(start_response, "200 OK", b'{"status":"ok"}')
    return _answer(start_response, "404 Not Found", b'{"error":"not found"}')
