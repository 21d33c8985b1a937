"""Keyset pagination for dashboard lists, reusing the API's `KeysetPage` (seeks on an index, never OFFSET,
never a COUNT of the table), with links kept relative to the current page."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework.request import Request

from checkpoints.api.pagination import KeysetPage


def _relative(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


class DashboardPage:
    """One page of `queryset` in `ordering` (`?limit=`, default 50); `next` / `previous` are relative links.

    A malformed cursor or limit raises ValidationFailed, which the dashboard shows as a 400 page.
    """

    def __init__(self, request: HttpRequest, queryset: QuerySet[Any], ordering: Sequence[str]) -> None:
        page = KeysetPage(Request(request), queryset, ordering)
        self.results: list[Any] = page.results
        self.next = _relative(page.next)
        self.previous = _relative(page.previous)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)
