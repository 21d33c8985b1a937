"""The admin's date drill-down without scanning the table.

Django's own `date_hierarchy` tag runs MIN/MAX and SELECT DISTINCT date_trunc(...) over the whole filtered
changelist: a full scan of a table with millions of rows on every page view. This one offers the same links
(the same `<field>__year/__month/__day` parameters, which the changelist filters on as usual) from the
calendar instead: years from the oldest row's (one row by primary key, an index seek) to now, the twelve
months, the days of the month. A period with no rows simply lists nothing.
"""

from __future__ import annotations

import calendar
import datetime
from typing import Any

from django import template
from django.utils import formats, timezone
from django.utils.text import capfirst

register = template.Library()

MAX_YEARS = 30


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@register.inclusion_tag("admin/date_hierarchy.html")
def calendar_date_hierarchy(cl: Any) -> dict[str, Any]:
    field = cl.date_hierarchy
    if not field:
        return {"show": False}
    year, month, day = (_int(cl.params.get(f"{field}__{part}")) for part in ("year", "month", "day"))

    def link(filters: dict[str, Any]) -> str:
        return str(cl.get_query_string(filters, [f"{field}__"]))

    if year and month and day and 1 <= month <= 12:
        moment = datetime.date(year, month, min(day, calendar.monthrange(year, month)[1]))
        back = {
            "link": link({f"{field}__year": year, f"{field}__month": month}),
            "title": capfirst(formats.date_format(moment, "YEAR_MONTH_FORMAT")),
        }
        return {
            "show": True,
            "back": back,
            "choices": [{"title": capfirst(formats.date_format(moment, "MONTH_DAY_FORMAT"))}],
        }
    if year and month and 1 <= month <= 12:
        days = range(1, calendar.monthrange(year, month)[1] + 1)
        choices = [
            {
                "link": link({f"{field}__year": year, f"{field}__month": month, f"{field}__day": d}),
                "title": capfirst(formats.date_format(datetime.date(year, month, d), "MONTH_DAY_FORMAT")),
            }
            for d in days
        ]
        return {
            "show": True,
            "back": {"link": link({f"{field}__year": year}), "title": str(year)},
            "choices": choices,
        }
    if year:
        choices = [
            {
                "link": link({f"{field}__year": year, f"{field}__month": m}),
                "title": capfirst(formats.date_format(datetime.date(year, m, 1), "YEAR_MONTH_FORMAT")),
            }
            for m in range(1, 13)
        ]
        return {"show": True, "back": {"link": link({}), "title": "All dates"}, "choices": choices}
    oldest = cl.queryset.order_by("pk").values_list(field, flat=True).first()
    if oldest is None:
        return {"show": False}
    newest_year = timezone.now().year
    first_year = max(min(oldest.year, newest_year), newest_year - MAX_YEARS)
    years = range(newest_year, first_year - 1, -1)
    return {
        "show": True,
        "back": None,
        "choices": [{"link": link({f"{field}__year": str(y)}), "title": str(y)} for y in years],
    }
