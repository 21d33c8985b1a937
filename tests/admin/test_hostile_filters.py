"""No value in a changelist's address answers 500 (generated from the admin registry).

For every registered ModelAdmin: every date drill-down (`<field>__year/__month/__day` of the date hierarchy
and of every other date field), every parameter of every list filter, the search, ordering and page
parameters and unknown lookups on every field, each with hostile values (out of range, negative,
non-numeric, huge, NUL bytes). The answer is the changelist (200), Django's redirect to the unfiltered list
flagged `?e=1` (302), or a 400 for a lookup the admin does not allow. Run on SQLite and PostgreSQL, which
raises DataError for values SQLite accepts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db import models
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkpoints.admin.base import CairnModelAdmin
from checkpoints.admin.changelist import INVALID_FILTERS
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db

MODEL_ADMINS = [
    (model, admin.site.get_model_admin(model))
    for model in apps.get_models()
    if admin.site.is_registered(model)
]
IDS = [model._meta.label for model, _ in MODEL_ADMINS]

HUGE = "9" * 5000
HOSTILE = (
    "99999999999999999999",
    "-99999999999999999999",
    "9999",
    "10000",
    "0",
    "-1",
    "13",
    "32",
    "abc",
    "",
    "1.5",
    "1e400",
    "\x00",
    "2026\x00",
    HUGE,
    "٢٠٢٦",
    "2026-02-30",
    "1,2,x",
    "'\"%_\\",
    "a" * 20_000,
)
# Values that pass Django's checks of a date drill-down and then reach date arithmetic or the database.
DATE_EDGES = (
    {"year": "9999", "month": "12"},
    {"year": "9999", "month": "12", "day": "31"},
    {"year": "9998", "month": "12", "day": "31"},
    {"year": "1", "month": "1", "day": "1"},
    {"year": "2026", "day": "31"},
    {"month": "99999999999999999999", "day": "99999999999999999999"},
)
LOOKUPS = ("", "__exact", "__iexact", "__isnull", "__in", "__gt", "__lte", "__range", "__regex", "__contains")
DATE_LOOKUPS = ("__year", "__month", "__day", "__week_day", "__hour", "__date", "__iso_year", "__year__gt")


def changelist_url(model: type[models.Model]) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def date_fields(model: type[models.Model]) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if isinstance(f, models.DateField)]


DATED = [(model, model_admin) for model, model_admin in MODEL_ADMINS if date_fields(model)]


def drill_downs(model: type[models.Model], model_admin: admin.ModelAdmin) -> Iterator[dict[str, str]]:
    """Hostile values at each level of the date hierarchy's drill-down, its edges, and `__year` of every
    other date field."""
    for field in date_fields(model):
        year, month, day = (f"{field}__{part}" for part in ("year", "month", "day"))
        for value in HOSTILE:
            yield {year: value}
            if field == model_admin.date_hierarchy:
                yield {year: "2026", month: value}
                yield {year: "2026", month: "2", day: value}
                yield {month: value}
                yield {day: value}
        if field == model_admin.date_hierarchy:
            for edge in DATE_EDGES:
                yield {f"{field}__{part}": value for part, value in edge.items()}


def filter_parameters(client: Client, model: type[models.Model], model_admin: admin.ModelAdmin) -> list[str]:
    """The query-string parameters of every list filter the changelist shows."""
    listing = client.get(changelist_url(model))
    changelist = listing.context["cl"]
    assert len(changelist.filter_specs) == len(model_admin.list_filter), "every list filter is shown"
    return sorted({p for spec in changelist.filter_specs for p in spec.expected_parameters()})


def shown(query: Mapping[str, str]) -> dict[str, str]:
    return {key[:40]: value[:40] for key, value in query.items()}


def assert_sensible(response: Any, model: type[models.Model], query: Mapping[str, str]) -> None:
    """`response` (the test client's) is the changelist, Django's redirect to the unfiltered list or a 400."""
    assert response.status_code in (200, 302, 400), f"{response.status_code} for {shown(query)}"
    if response.status_code == 200:
        assert isinstance(response.context["cl"], ChangeList), f"no changelist for {shown(query)}"
        assert response.context["cl"].model is model
    elif response.status_code == 302:
        assert response["Location"] == f"{changelist_url(model)}?e=1", shown(query)


def check_all(client: Client, model: type[models.Model], queries: Iterator[dict[str, str]]) -> int:
    """Request the changelist with each query; fail listing every query that was not answered sensibly."""
    url = changelist_url(model)
    count = 0
    failures = []
    for query in queries:
        count += 1
        try:
            assert_sensible(client.get(url, query), model, query)
        except Exception as error:  # the test client re-raises the view's exception
            failures.append(f"{type(error).__name__}: {str(error)[:120]} for {shown(query)}")
    assert not failures, f"{len(failures)} of {count} failed:\n" + "\n".join(failures[:40])
    return count


@pytest.mark.parametrize(("model", "model_admin"), DATED, ids=[m._meta.label for m, _ in DATED])
def test_no_date_drill_down_value_answers_500(
    admin_client: Client, everything: World, model: type[models.Model], model_admin: admin.ModelAdmin
) -> None:
    assert check_all(admin_client, model, drill_downs(model, model_admin)) >= len(HOSTILE)


@pytest.mark.parametrize(("model", "model_admin"), MODEL_ADMINS, ids=IDS)
def test_no_list_filter_value_answers_500(
    admin_client: Client, everything: World, model: type[models.Model], model_admin: admin.ModelAdmin
) -> None:
    parameters = filter_parameters(admin_client, model, model_admin)
    # Every other value also with facets shown (their counts query each filter's choices).
    queries = (
        {parameter: value, **({"_facets": "1"} if index % 2 else {})}
        for parameter in parameters
        for index, value in enumerate(HOSTILE)
    )
    assert check_all(admin_client, model, queries) == len(parameters) * len(HOSTILE)


@pytest.mark.parametrize(("model", "model_admin"), MODEL_ADMINS, ids=IDS)
def test_no_search_ordering_or_page_value_answers_500(
    admin_client: Client, everything: World, model: type[models.Model], model_admin: admin.ModelAdmin
) -> None:
    values = (*HOSTILE, "a" * 200_000, "1.-2.99999999999999999999.x")
    # Every other value also with facets shown and "show all" (the other queries the list runs).
    queries = (
        {name: value, **({"_facets": "1", "all": ""} if index % 2 else {})}
        for name in ("q", "o", "p")
        for index, value in enumerate(values)
    )
    check_all(admin_client, model, queries)


@pytest.mark.parametrize(("model", "model_admin"), MODEL_ADMINS, ids=IDS)
def test_no_lookup_on_any_field_answers_500(
    admin_client: Client, everything: World, model: type[models.Model], model_admin: admin.ModelAdmin
) -> None:
    """Parameters no filter declares: every field with common lookups (and date parts on date fields), plus
    names that are no field at all; random pairs of them with hostile or random values."""
    names = [field.name for field in model._meta.concrete_fields]
    parameters = [name + lookup for name in names for lookup in LOOKUPS]
    parameters += [name + lookup for name in date_fields(model) for lookup in DATE_LOOKUPS]
    parameters += ["nosuch", "nosuch__exact", "\x00", "pk__in", "id__gt", "workspace__slug", "_to_field"]
    values = st.one_of(
        st.sampled_from(HOSTILE), st.text(max_size=12), st.integers().map(str), st.just("\x00")
    )

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(query=st.dictionaries(st.sampled_from(parameters), values, min_size=1, max_size=2))
    def no_500(query: dict[str, str]) -> None:
        assert_sensible(admin_client.get(changelist_url(model), query), model, query)

    no_500()


@pytest.mark.parametrize(("model", "model_admin"), MODEL_ADMINS, ids=IDS)
def test_a_dropped_filter_says_why(
    admin_client: Client, everything: World, model: type[models.Model], model_admin: admin.ModelAdmin
) -> None:
    dated = model_admin.date_hierarchy or next(iter(date_fields(model)), None)
    query = {f"{dated}__year": "99999999999999999999"} if dated else {"id__exact": "x"}
    response = admin_client.get(changelist_url(model), query, follow=True)
    assert response.redirect_chain == [(f"{changelist_url(model)}?e=1", 302)]
    assert response.status_code == 200
    assert INVALID_FILTERS in response.content.decode()


def test_the_date_hierarchies_and_filters_are_all_covered() -> None:
    """The generated cases reach every date hierarchy and list filter of the site."""
    assert {a.date_hierarchy for _, a in DATED} >= {a.date_hierarchy for _, a in MODEL_ADMINS} - {None}
    assert len(DATED) >= 11
    assert sum(len(a.list_filter) for _, a in MODEL_ADMINS) >= 20


HOSTILE_IDS = ("abc", "99999999999999999999", "-1", "0", "\x00", "1\x00", "9" * 5000, "%", "1.5", "a" * 5000)


@pytest.mark.parametrize(("model", "model_admin"), MODEL_ADMINS, ids=IDS)
@pytest.mark.parametrize("view", ["change", "delete", "history"])
def test_no_object_id_in_the_address_answers_500(
    admin_client: Client,
    everything: World,
    model: type[models.Model],
    model_admin: admin.ModelAdmin,
    view: str,
) -> None:
    """A change, delete or history page of an object that cannot exist says so (Django's redirect to the
    admin's index with a message) or answers 4xx."""
    failures = []
    for object_id in HOSTILE_IDS:
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=[object_id])
        try:
            response = admin_client.get(url)
        except Exception as error:  # the test client re-raises the view's exception
            failures.append(f"{type(error).__name__}: {str(error)[:120]} for {object_id[:40]!r}")
            continue
        if response.status_code == 302:
            assert response["Location"] == reverse("admin:index"), object_id[:40]
        elif not 400 <= response.status_code < 500:
            failures.append(f"{response.status_code} for {object_id[:40]!r}")
    assert not failures, "\n".join(failures)


BULK = [(model, a) for model, a in MODEL_ADMINS if isinstance(a, CairnModelAdmin) and a.bulk_operations]


@pytest.mark.parametrize(("model", "model_admin"), BULK, ids=[m._meta.label for m, _ in BULK])
def test_a_bulk_operation_with_bad_filters_goes_back_to_the_list_and_says_why(
    admin_client: Client, everything: World, model: type[models.Model], model_admin: CairnModelAdmin
) -> None:
    info = model._meta.app_label, model._meta.model_name
    field = model_admin.date_hierarchy
    bad = ({f"{field}__year": "99999999999999999999"}, {f"{field}__year": "2026", f"{field}__month": "13"})
    for operation in model_admin.bulk_operations:
        url = reverse("admin:{}_{}_bulk".format(*info), args=[operation.name])
        for query in bad:
            response = admin_client.get(url, query, follow=True)
            assert response.redirect_chain == [(changelist_url(model), 302)], shown(query)
            assert INVALID_FILTERS in response.content.decode()
            assert isinstance(response.context["cl"], ChangeList)


AUTOCOMPLETED = [
    (model, field) for model, model_admin in MODEL_ADMINS for field in model_admin.autocomplete_fields
]
AUTOCOMPLETED_IDS = [f"{model._meta.label}.{field}" for model, field in AUTOCOMPLETED]


@pytest.mark.parametrize(("model", "field"), AUTOCOMPLETED, ids=AUTOCOMPLETED_IDS)
def test_no_autocomplete_search_answers_500(
    admin_client: Client, everything: World, model: type[models.Model], field: str
) -> None:
    """The search behind a related field's autocomplete: results as JSON, or 400 for a search the
    database cannot run (a NUL character, longer than the API's searches)."""
    url = reverse("admin:autocomplete")
    opts = model._meta
    params = {"app_label": opts.app_label, "model_name": str(opts.model_name), "field_name": field}
    for term in (*HOSTILE, "a" * 60_000, "demo"):
        response = admin_client.get(url, {**params, "term": term})
        assert response.status_code in (200, 400), f"{response.status_code} for {term[:40]!r}"
        if response.status_code == 200:
            assert "results" in response.json()
    assert admin_client.get(url, {**params, "term": "\x00"}).status_code == 400
