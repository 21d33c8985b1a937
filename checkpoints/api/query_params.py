"""Unknown query parameters are refused, as unknown body fields are: `?agnet_id=x` would otherwise filter
nothing and answer with everything, a client bug that looks like data.

What an operation accepts is what the OpenAPI document lists for it, so the document and the check cannot
drift apart: a parameter a view reads but the document omits is refused too (and the suite fails on it).
The document is generated once per process, on the first request that needs it.
"""

from __future__ import annotations

import re
from functools import cache

from rest_framework.request import Request

from checkpoints.exceptions import ValidationFailed

# `<cid:thread_id>` or `<thread_id>` in a Django route, `{thread_id}` in an OpenAPI path.
_ROUTE_PARAMETER = re.compile(r"<(?:[^>:]+:)?([^>]+)>")


@cache
def documented_query_parameters() -> dict[tuple[str, str], frozenset[str]]:
    """`{(openapi path, METHOD): query parameter names}` for every documented operation."""
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (path, method.upper()): frozenset(
            parameter["name"] for parameter in operation.get("parameters", []) if parameter["in"] == "query"
        )
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }


def openapi_path(route: str) -> str:
    """A Django route as an OpenAPI path: `threads/<cid:thread_id>/` -> `/threads/{thread_id}/`."""
    return "/" + _ROUTE_PARAMETER.sub(r"{\1}", route)


def refuse_unknown_query_parameters(request: Request) -> None:
    """400 `validation_error` naming every query parameter the request's operation does not document."""
    if not request.query_params or request.resolver_match is None:
        return
    method = "GET" if request.method == "HEAD" else request.method
    known = documented_query_parameters().get((openapi_path(request.resolver_match.route), method or ""))
    if known is None:  # OPTIONS, or a method the view does not allow (answered 405 by the view)
        return
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        names = ", ".join(repr(name) for name in unknown[:10])
        raise ValidationFailed(
            f"Unknown query parameter(s): {names}. Known here: {', '.join(sorted(known)) or 'none'}.",
            {"fields": {name: ["Unknown query parameter."] for name in unknown[:10]}},
        )
