"""What every API view shares: the request's workspace and actor, strict input, query parameter helpers."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from checkpoints.api.compiled_validation import compiled
from checkpoints.api.filters import FilterBackend, filter_queryset, names_a_filter
from checkpoints.api.pagination import KeysetPage, PageReader
from checkpoints.api.query_params import refuse_unknown_query_parameters
from checkpoints.api.schema import FilteredAutoSchema
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import ApiKey, Workspace
from checkpoints.parts import enabled
from checkpoints.services.audit import Actor

USER_PARAM = OpenApiParameter(
    "user_id",
    str,
    description="Only this end user's threads (another user's thread is a 404). Omitted: every thread of "
    "the workspace; there is no default user. Empty (`user_id=`): threads without a user.",
)

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


class WorkspaceAPIView(APIView):
    """Base view. Every queryset a request reaches starts from `self.workspace` (the key's workspace)."""

    # A list view names its FilterSet in `filterset_class` and applies it with `filter_queryset`: the one
    # definition of its filters, documented from there and accepted by the unknown-parameter check.
    schema = FilteredAutoSchema()
    filter_backends: list[type[FilterBackend]] = [FilterBackend]
    filterset_class: type[django_filters.FilterSet] | None = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authentication, scope, throttle: a 401 comes first
        refuse_unknown_query_parameters(request, self)

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        # The server calls the response's public `close()` once it has sent it: release after Django's close,
        # then drop the wrapper (it names the response, which would otherwise name it back).
        django_close = response.close

        def close_and_release() -> None:
            django_close()
            del response.close
            self._release(response)

        response.close = close_and_release  # type: ignore[method-assign]
        return response

    def _release(self, response: Response) -> None:
        """Once the response is sent: drop what DRF's request, this view and the response hold of each other
        (the request names itself and the view in its parser context; the view names both, and itself in
        `head`, which Django's `View.setup` sets to its `get`; the response's renderer context names all
        three). Reference counting then frees a request's objects at once; the cycles left the collector a
        pass every dozen requests (docs/performance.md). The view serves one request only."""
        request = vars(self).get("request")
        if isinstance(request, Request):
            request.parser_context = {}
        vars(self).clear()
        response.renderer_context = None  # type: ignore[attr-defined]  # set by DRF, not declared

    def filter_queryset(self, queryset: QuerySet[Any]) -> Any:
        for backend in self.filter_backends:
            queryset = backend().filter_queryset(self.request, queryset, self)
        return queryset

    def page(
        self,
        pages: PageReader,
        ordering: list[str],
        filterset_class: type[django_filters.FilterSet] | None = None,
    ) -> KeysetPage:
        """A page: read by its static statement, or, when the request names a filter of the FilterSet (by
        default the view's), as a queryset through it."""
        filterset_class = filterset_class or self.filterset_class
        params = self.request.query_params
        if filterset_class is None or not names_a_filter(filterset_class, params):
            return KeysetPage(self.request, pages, ordering)
        return KeysetPage(self.request, filter_queryset(filterset_class, params, pages.queryset()), ordering)

    @property
    def api_key(self) -> ApiKey:
        key = self.request.auth
        assert isinstance(key, ApiKey)  # guaranteed by HasScope, which runs before any handler
        return key

    @property
    def workspace(self) -> Workspace:
        return self.api_key.workspace

    @property
    def actor(self) -> Actor:
        return Actor.for_api_key(self.api_key)

    def validated(self, serializer_class: type[Any], data: Any = None) -> dict[str, Any]:
        """The body's validated data: from the check compiled from the serializer where it accepts the body
        (exactly what the serializer gives), else from the serializer, which words every error."""
        data = self.request.data if data is None else data
        fast = compiled(serializer_class)(data) if enabled("compiled_validation") else None
        if fast is not None:
            return fast
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def query_bool(self, name: str, default: bool = False) -> bool:
        raw = self.request.query_params.get(name)
        if raw is None:
            return default
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        message = f"{name} must be true or false."
        raise ValidationFailed(message, {"fields": {name: [message]}})

    def query_user_id(self) -> str | None:
        """`?user_id=`: scope the request to one end user (another user's thread is a 404). None when absent;
        "" means threads without a user (there is no default user)."""
        user_id = self.request.query_params.get("user_id")
        if user_id is not None and len(user_id) > 255:
            raise ValidationFailed(
                "user_id is longer than 255 characters.", {"fields": {"user_id": ["Too long."]}}
            )
        if user_id is not None and user_id != user_id.strip():
            message = "user_id has leading or trailing whitespace."
            raise ValidationFailed(message, {"fields": {"user_id": [message]}})
        return user_id

    def query_namespace(self) -> str | None:
        """`?namespace=` as given (empty = the root namespace); None when absent (= any namespace, or the
        root namespace where one namespace is needed)."""
        value = self.request.query_params.get("namespace")
        if value is not None and len(value) > 255:
            message = "namespace is longer than 255 characters."
            raise ValidationFailed(message, {"fields": {"namespace": [message]}})
        return value


# A view whose POST only reads (a search, a dry run: its body is the question), so a read key may send it
# (docs/concepts.md, on scopes). A comment, not a docstring: the OpenAPI document would show it.
class ReadingPostView(WorkspaceAPIView):
    required_scopes = {"POST": ApiKey.Scope.READ}
