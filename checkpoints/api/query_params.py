"""Unknown query parameters are refused, as unknown body fields are: `?agnet_id=x` would otherwise filter
nothing and answer with everything, a client bug that looks like data.

What an operation accepts comes from the same definitions the OpenAPI document is generated from:

- the view's FilterSet (`filterset_class`, GET only), applied through its `filter_backends` and documented
  by drf-spectacular's django-filter extension;
- the parameters its handler declares with `extend_schema(parameters=...)`: the page parameters
  (`pagination.PAGE_PARAMS`) and the view's own options (`user_id`, `namespace`, `include_state`...).

So a parameter cannot be accepted without being documented, nor documented without being accepted
(tests/api/test_query_parameters.py compares the two for every operation).
"""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.views import APIView

from checkpoints.exceptions import ValidationFailed

# `<cid:thread_id>` or `<thread_id>` in a Django route, `{thread_id}` in an OpenAPI path.
_ROUTE_PARAMETER = re.compile(r"<(?:[^>:]+:)?([^>]+)>")
_ACCEPTED: dict[tuple[type[APIView], str], frozenset[str]] = {}


def openapi_path(route: str) -> str:
    """A Django route as an OpenAPI path: `threads/<cid:thread_id>/` -> `/threads/{thread_id}/`."""
    return "/" + _ROUTE_PARAMETER.sub(r"{\1}", route)


def declared_query_parameters(view: APIView, method: str) -> list[str]:
    """Names of the query parameters the handler of `method` declares with `extend_schema(parameters=...)`."""
    handler = getattr(type(view), method.lower(), None)
    schema_class = getattr(handler, "kwargs", {}).get("schema")
    if schema_class is None:
        return []
    schema = schema_class()
    schema.view, schema.method = view, method
    return [
        parameter.name
        for parameter in schema.get_override_parameters()
        if isinstance(parameter, OpenApiParameter) and parameter.location == OpenApiParameter.QUERY
    ]


def accepted_query_parameters(view: APIView, method: str) -> frozenset[str] | None:
    """What the view's handler of `method` accepts (computed once per view class and method); None where
    the view has no such handler (OPTIONS, or a 405)."""
    key = (type(view), method)
    if key not in _ACCEPTED:
        if method == "OPTIONS" or not hasattr(view, method.lower()):
            return None
        names = set(declared_query_parameters(view, method))
        filterset_class: Any = getattr(view, "filterset_class", None)
        if method == "GET" and filterset_class is not None:
            names |= set(filterset_class.base_filters)
        _ACCEPTED[key] = frozenset(names)
    return _ACCEPTED[key]


def refuse_unknown_query_parameters(request: Request, view: APIView) -> None:
    """400 `validation_error` naming every query parameter the request's operation does not accept."""
    if not request.query_params:
        return
    method = "GET" if request.method == "HEAD" else request.method or ""
    known = accepted_query_parameters(view, method)
    if known is None:
        return
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        names = ", ".join(repr(name) for name in unknown[:10])
        raise ValidationFailed(
            f"Unknown query parameter(s): {names}. Known here: {', '.join(sorted(known)) or 'none'}.",
            {"fields": {name: ["Unknown query parameter."] for name in unknown[:10]}},
        )


def query_parameter_table() -> dict[tuple[str, str], frozenset[str]]:
    """`{(openapi path, METHOD): accepted names}` for every API operation (the tests compare it with the
    document; computing it also fills the per-view cache before the first request)."""
    from django.urls import URLPattern, URLResolver, get_resolver

    table: dict[tuple[str, str], frozenset[str]] = {}
    resolver = next(
        entry
        for entry in get_resolver().url_patterns
        if isinstance(entry, URLResolver) and entry.namespace == "api"
    )
    prefix = str(resolver.pattern)
    for entry in resolver.url_patterns:
        view_class = getattr(getattr(entry, "callback", None), "view_class", None)
        if not isinstance(entry, URLPattern) or view_class is None or not issubclass(view_class, APIView):
            continue
        view = view_class()
        view.request, view.kwargs = None, {}
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            accepted = accepted_query_parameters(view, method)
            if accepted is not None:
                table[(openapi_path(prefix + str(entry.pattern)), method)] = accepted
    return table
