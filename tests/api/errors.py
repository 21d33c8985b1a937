"""Assertions on the API's error bodies (docs/api/index.md describes their shape)."""

from __future__ import annotations

from typing import Any


def assert_not_found(response: Any, message: str) -> None:
    """A 404 whose whole error body is `not_found` with `message` and no details."""
    assert response.status_code == 404
    assert response.json()["error"] == {"code": "not_found", "message": message, "details": {}}
