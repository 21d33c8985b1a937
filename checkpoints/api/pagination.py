"""Keyset cursor pagination: `{"results", "next", "previous"}`, `limit` 1..500 (default 50).

Pages are seeks on an index (`WHERE (a, b) < (x, y) ORDER BY a DESC, b DESC LIMIT n`), never OFFSET, so
page 10,000 costs what page 1 costs. The ordering must end in a unique field (the primary key).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from django.db import models
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.utils.urls import replace_query_param

from checkpoints.api.renderers import RawJSON, json_array, json_object, json_scalar, written_response
from checkpoints.exceptions import ValidationFailed
from checkpoints.numbers import parse_whole_number
from checkpoints.storage.keyset import Seek

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
LIMIT_PARAM = OpenApiParameter("limit", int, description="Page size, 1-500 (default 50).")
# What every list view declares in its schema, and so accepts: `extend_schema(parameters=[*PAGE_PARAMS])`.
PAGE_PARAMS = [
    LIMIT_PARAM,
    OpenApiParameter("cursor", str, description="Opaque cursor from `next` or `previous`."),
]


def parse_limit(request: Request, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> int:
    """The `limit` query parameter: an integer from 1 to `maximum` (0 or negative is an error, not "all")."""
    raw = request.query_params.get("limit")
    if raw is None:  # present but empty is not a number either
        return default
    limit = parse_whole_number(raw)
    if limit is None:
        raise ValidationFailed(
            "limit must be an integer.", {"fields": {"limit": ["A whole number is required."]}}
        )
    if not 1 <= limit <= maximum:
        message = f"limit must be between 1 and {maximum}."
        raise ValidationFailed(message, {"fields": {"limit": [message]}})
    return limit


def cursor_token(payload: Any) -> str:
    """The opaque cursor of a page position: its JSON, base64url without padding."""
    return base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")


def cursor_payload(token: str) -> Any:
    """The position a `cursor_token` encodes (ValueError / binascii.Error if it is not one)."""
    return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


def queryset_rows(queryset: models.QuerySet[Any], seek: Seek) -> list[Any]:
    """What a page of a queryset reads for `seek` (`KeysetPage`)."""
    if seek.position is not None:
        queryset = queryset.filter(seek.after())
    return list(queryset.order_by(*seek.ordering)[: seek.limit])


class PageReader(Protocol):
    """What reads its own pages (a static statement): `read` gives rows of `model` strictly after
    `seek.position` (when given) in `seek.ordering`, at most `seek.limit` of them, in that order;
    `queryset` gives the same rows for the ORM, for a FilterSet to filter further."""

    @property
    def model(self) -> type[models.Model]: ...

    def read(self, seek: Seek) -> list[Any]: ...

    def queryset(self) -> models.QuerySet[Any]: ...


class KeysetPage:
    """One page, ordered by `ordering` (field names, "-" for descending), of a queryset or of what a
    `PageReader` reads."""

    cursor_param = "cursor"

    def __init__(
        self, request: Request, source: models.QuerySet[Any] | PageReader, ordering: Sequence[str]
    ) -> None:
        self.request = request
        self.ordering = list(ordering)
        self.limit = parse_limit(request)
        self.model = source.model
        position, backwards = self._decode(request.query_params.get(self.cursor_param))
        page_ordering = [self._flip(f) for f in self.ordering] if backwards else self.ordering
        seek = Seek(page_ordering, position, self.limit + 1)
        rows = queryset_rows(source, seek) if isinstance(source, models.QuerySet) else source.read(seek)
        more = len(rows) > self.limit
        rows = rows[: self.limit]
        if backwards:
            rows.reverse()
        self.results = rows
        first, last = (rows[0], rows[-1]) if rows else (None, None)
        # Going forwards there is a previous page if we arrived by cursor; going backwards, if more remain.
        has_next = (not backwards and more) or (backwards and position is not None)
        has_previous = (backwards and more) or (not backwards and position is not None)
        self.next = self._link(last, backwards=False) if has_next and last is not None else None
        self.previous = self._link(first, backwards=True) if has_previous and first is not None else None

    @staticmethod
    def _flip(field: str) -> str:
        return field[1:] if field.startswith("-") else f"-{field}"

    def _value(self, row: Any, field: str) -> Any:
        value = getattr(row, field.lstrip("-"))
        return value.isoformat() if isinstance(value, datetime) else value

    def _link(self, row: Any, *, backwards: bool) -> str:
        payload = {"p": [self._value(row, f) for f in self.ordering], "b": backwards}
        token = cursor_token(payload)
        return replace_query_param(self.request.build_absolute_uri(), self.cursor_param, token)

    def _decode(self, token: str | None) -> tuple[list[Any] | None, bool]:
        if not token:
            return None, False
        try:
            payload = cursor_payload(token)
            position, backwards = payload["p"], bool(payload["b"])
            if not isinstance(position, list) or len(position) != len(self.ordering):
                raise ValueError("cursor does not match this list's ordering")
            position = [self._coerce(f, v) for f, v in zip(self.ordering, position, strict=True)]
        except (ValueError, KeyError, TypeError, binascii.Error, RecursionError, OverflowError) as exc:
            raise ValidationFailed(
                "Invalid cursor; use the `next` or `previous` link as given.",
                {"fields": {self.cursor_param: ["Invalid cursor."]}},
            ) from exc
        return position, backwards

    def _coerce(self, field: str, value: Any) -> Any:
        """A cursor value of the ordering field's own type; anything a client forged is a ValueError."""
        model_field = self.model._meta.get_field(field.lstrip("-"))
        if isinstance(model_field, models.DateTimeField):
            if not isinstance(value, str):
                raise ValueError("bad timestamp in cursor")
            parsed = datetime.fromisoformat(value)
            if parsed.tzinfo is None:
                raise ValueError("naive timestamp in cursor")
            return parsed
        if isinstance(model_field, models.IntegerField | models.AutoField):
            # Bounded to 64 bits: SQLite cannot even bind a larger integer.
            if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
                raise ValueError("bad integer in cursor")
            return value
        if not isinstance(value, str) or "\x00" in value:
            raise ValueError("bad cursor value")
        value.encode("utf-8")  # UnicodeEncodeError (a ValueError) on a lone surrogate
        return value

    def envelope(self, results: list[Any]) -> dict[str, Any]:
        return {"results": results, "next": self.next, "previous": self.previous}

    def written(self, results: list[RawJSON]) -> HttpResponse:
        """The envelope of results already written (a checkpoint page), answered as it is written."""
        members = [("next", json_scalar(self.next)), ("previous", json_scalar(self.previous))]
        return written_response(json_object([("results", json_array(results)), *members]))


def page_serializer(name: str, item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The documented shape of `KeysetPage.envelope` (for the OpenAPI schema): `results`, a list of
    `item`, and the links to the next and previous pages (null at either end)."""
    fields = {
        "results": item(many=True),
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
    }
    return type(name, (serializers.Serializer,), {"__module__": item.__module__, **fields})


class OffsetPage:
    """A page of a ranking (search by meaning): the order is a score computed per request, not an index,
    so the cursor is the position in it. `envelope` takes up to `limit + 1` results from `offset` (the
    one more says whether there is a next page) and answers like `KeysetPage`."""

    cursor_param = "cursor"

    def __init__(self, request: Request) -> None:
        self.request = request
        self.limit = parse_limit(request)
        self.offset = self._decode(request.query_params.get(self.cursor_param))

    def _decode(self, token: str | None) -> int:
        if not token:
            return 0
        try:
            offset = cursor_payload(token)["o"]
            if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < 2**31:
                raise ValueError("bad offset in cursor")
        except (ValueError, KeyError, TypeError, binascii.Error, RecursionError) as exc:
            raise ValidationFailed(
                "Invalid cursor; use the `next` or `previous` link as given.",
                {"fields": {self.cursor_param: ["Invalid cursor."]}},
            ) from exc
        return offset

    def _link(self, offset: int) -> str:
        return replace_query_param(
            self.request.build_absolute_uri(), self.cursor_param, cursor_token({"o": offset})
        )

    def envelope(self, results: list[Any]) -> dict[str, Any]:
        more = len(results) > self.limit
        previous = self._link(max(0, self.offset - self.limit)) if self.offset else None
        return {
            "results": results[: self.limit],
            "next": self._link(self.offset + self.limit) if more else None,
            "previous": previous,
        }
