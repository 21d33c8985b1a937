"""/favicon.ico: browsers ask for it on every site whatever the pages link to, so it answers with the
dashboard's SVG icon (static/checkpoints/favicon.svg) instead of a 404 in every log."""

from __future__ import annotations

from functools import cache

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

ICON = "checkpoints/favicon.svg"
ONE_DAY = 86_400


@cache
def _icon_bytes() -> bytes:
    path = finders.find(ICON)
    if not isinstance(path, str):  # a broken deployment: say so loudly rather than serve nothing
        raise FileNotFoundError(f"static file {ICON} is missing")
    with open(path, "rb") as icon:
        return icon.read()


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(_icon_bytes(), content_type="image/svg+xml")
    response["Cache-Control"] = f"public, max-age={ONE_DAY}"
    return response
