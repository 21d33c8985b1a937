"""Content negotiation: DRF's own, answered at once for what agents send.

An agent's request carries no `Accept` header, `*/*` or `application/json`, and no `?format=`. For those,
DRF's negotiation always picks the view's first renderer with its plain media type, after parsing the
header and ordering its media ranges on every request (about 60 µs). This class gives that answer
directly when the first renderer is the JSON one, and leaves every other request to DRF unchanged (so an
`Accept: text/html` is still a 406). See docs/performance.md.
"""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

# The Accept headers whose answer is the first renderer's own media type (None: no header, as `*/*`).
PLAIN_ACCEPT = frozenset({None, "*/*", "application/json"})


class CairnContentNegotiation(DefaultContentNegotiation):
    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderers = list(renderers)  # DRF passes the view's list (one or two renderers)
        if (
            renderers
            and renderers[0].media_type == "application/json"
            and not format_suffix
            and request.META.get("HTTP_ACCEPT") in PLAIN_ACCEPT
            and self.settings.URL_FORMAT_OVERRIDE not in request.query_params
        ):
            return renderers[0], renderers[0].media_type
        renderer, media_type = super().select_renderer(request, renderers, format_suffix)
        return renderer, media_type
