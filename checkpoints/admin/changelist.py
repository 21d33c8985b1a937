"""Changelists that answer every value in their address without a server error (docs/admin.md).

Django's ChangeList already turns most bad lookups from the query string into IncorrectLookupParameters,
which the admin answers with a redirect to the unfiltered list flagged `?e=1`. Some escape it, because they
fail only later, when the query is compiled or run:

- dates out of range in a date drill-down or a `<field>__year` lookup (`?updated_at__year=` followed by
  twenty nines overflows Python's datetime; `9999` ends in the year 10000);
- integers too large for the database, NUL bytes in text (PostgreSQL refuses them: DataError), lookups the
  backend does not support (NotSupportedError);
- search text longer than the database's LIKE patterns allow (SQLite: "pattern too complex"): refused
  beyond the API's own search limit, here and in the autocomplete of related fields.

`FilterGuardMixin` is the single place that handles them: every ModelAdmin of the site includes it.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ERROR_FLAG, ChangeList
from django.core.exceptions import BadRequest
from django.db import DataError, NotSupportedError, models, transaction
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest

from checkpoints.services.search import MAX_QUERY_CHARS

# A filter value longer than this is no filter anyone means (ids, slugs and dates are far shorter).
MAX_FILTER_VALUE_CHARS = 1000
# Never from an address (the admin's own links never use them): patterns run against every row (on SQLite
# by Python's backtracking `re`), and `__range`, whose text the admin does not split (each character would
# become a bound).
REFUSED_LOOKUPS = frozenset({"regex", "iregex", "range"})
INVALID_FILTERS = (
    "The filters or search in the address are not valid (for example a date out of range, text the "
    f"database cannot hold, or a search longer than {MAX_QUERY_CHARS} characters), so the list is shown "
    "without them."
)


def search_refusal(term: str) -> str | None:
    """Why `term` cannot be searched for (None: it can). As long as the API's own searches: a longer one
    could exceed SQLite's LIKE pattern limit; PostgreSQL cannot hold a NUL character."""
    if len(term) > MAX_QUERY_CHARS:
        return f"The search is longer than {MAX_QUERY_CHARS} characters."
    if "\x00" in term:
        return "The search contains a NUL character."
    return None


class GuardedChangeList(ChangeList):
    """A ChangeList whose bad lookup values, found in date arithmetic or by the database, are bad lookup
    parameters like any other."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> Any:
        # (A NUL never gets here: Django's search form refuses it with a message and searches nothing.)
        refusal = search_refusal(self.query)
        if refusal:
            raise IncorrectLookupParameters(refusal)
        return super().get_queryset(request, exclude_parameters)

    def get_filters(self, request: HttpRequest) -> Any:
        # The drill-down computes the end of the chosen period (`?created_at__year=9999` ends in 10000).
        try:
            return super().get_filters(request)
        except (OverflowError, ValueError) as exc:
            raise IncorrectLookupParameters(exc) from exc

    def get_results(self, request: HttpRequest) -> None:
        # The first queries of the filtered list (the count, the page) compile and run the lookups. A
        # savepoint keeps PostgreSQL's transaction usable after a DataError.
        try:
            with transaction.atomic(using=self.queryset.db):
                super().get_results(request)
        except (OverflowError, ValueError, DataError, NotSupportedError) as exc:
            raise IncorrectLookupParameters(exc) from exc


class FilterGuardMixin:
    """For a ModelAdmin: its changelist answers any address with the list (200), the unfiltered list with
    a message saying why (302 to `?e=1`), or 400 for a lookup it refuses; never a server error."""

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return GuardedChangeList

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        """Pattern lookups and overlong values are refused (400), before any query runs."""
        if len(value) > MAX_FILTER_VALUE_CHARS or REFUSED_LOOKUPS & set(lookup.split(LOOKUP_SEP)):
            return False
        # Binary columns (a medallion's vector) hold bytes no address can spell: never a filter.
        model = getattr(self, "model", None)
        if model is not None:
            binary = {f.name for f in model._meta.concrete_fields if isinstance(f, models.BinaryField)}
            if lookup.split(LOOKUP_SEP)[0] in binary:
                return False
        allowed: bool = super().lookup_allowed(lookup, value, request)  # type: ignore[misc]
        return allowed

    def get_search_results(self, request: HttpRequest, queryset: Any, search_term: str) -> Any:
        """The changelist has refused a bad search already; other searches (the autocomplete of a related
        field) answer 400."""
        refusal = search_refusal(search_term)
        if refusal:
            raise BadRequest(refusal)
        return super().get_search_results(request, queryset, search_term)  # type: ignore[misc]

    def get_changelist_instance(self, request: HttpRequest) -> ChangeList:
        try:
            changelist: ChangeList = super().get_changelist_instance(request)  # type: ignore[misc]
        except IncorrectLookupParameters:
            # The admin redirects to the unfiltered list (`?e=1`); the message there says why.
            if ERROR_FLAG not in request.GET:
                messages.error(request, INVALID_FILTERS)
            raise
        return changelist
