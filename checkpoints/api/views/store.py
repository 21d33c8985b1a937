"""The store routes (docs/store.md): the Agent Protocol's `PUT/GET/DELETE store/items`,
`POST store/items/search` and `POST store/namespaces`, with its bodies and answers, so `langgraph-sdk`'s
store client works unchanged; and `POST store/batch/`, LangGraph's batch of operations in one request (the
SDK's CairnStore)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.exceptions import ValidationError as DRFValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.fields import StrictCharField
from checkpoints.api.serializers.store import (
    NamespaceField,
    NamespacesSerializer,
    SearchItemsSerializer,
    StoreBatchResultSerializer,
    StoreBatchSerializer,
    StoreDeleteSerializer,
    StoreItemSerializer,
    StoreNamespacesSerializer,
    StorePutSerializer,
    StoreSearchSerializer,
)
from checkpoints.api.views.base import ReadingPostView, WorkspaceAPIView
from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.models import ApiKey
from checkpoints.models.store import NAMESPACE_SEPARATOR
from checkpoints.services.store import (
    item_representation,
    store_batch,
    store_delete,
    store_get,
    store_list_namespaces,
    store_put,
    store_search,
)

KEY_FIELD = StrictCharField(min_length=1, max_length=1024)
GET_PARAMS = [
    OpenApiParameter("key", str, required=True, description="The item's key."),
    OpenApiParameter(
        "namespace",
        str,
        many=True,
        description="The item's namespace: its labels joined by `.` (as langgraph-sdk sends it), or the "
        "parameter repeated once per label.",
    ),
    OpenApiParameter("refresh_ttl", bool, description="Push the item's TTL back (default true)."),
]


class StoreItemsView(WorkspaceAPIView):
    @extend_schema(
        operation_id="store_item_put",
        summary="Insert or replace an item (204)",
        request=StorePutSerializer,
        responses={204: None},
    )
    def put(self, request: Request) -> Response:
        return self.write_item(store_put, StorePutSerializer)

    @extend_schema(
        operation_id="store_item_get",
        summary="One item (404 if absent or expired)",
        parameters=GET_PARAMS,
        responses=StoreItemSerializer,
    )
    def get(self, request: Request) -> Response:
        key = self._key()
        item = store_get(
            workspace=self.workspace,
            namespace=self._namespace(),
            key=key,
            refresh_ttl=self.query_bool("refresh_ttl", default=True),
        )
        if item is None:
            raise NotFound("No such item.")
        return Response(item_representation(item))

    def _key(self) -> str:
        try:
            return str(KEY_FIELD.run_validation(self.request.query_params.get("key", "")))
        except DRFValidationError as exc:
            message = "key must be 1 to 1024 characters, without NUL."
            raise ValidationFailed(message, {"fields": {"key": [message]}}) from exc

    def _namespace(self) -> tuple[str, ...]:
        given = self.request.query_params.getlist("namespace")
        labels: Any = given if len(given) > 1 else (given[0].split(NAMESPACE_SEPARATOR) if given else [])
        field = NamespaceField(min_length=1)
        try:
            return tuple(field.run_validation(labels))
        except DRFValidationError as exc:
            message = "namespace must name 1 to 64 non-empty labels."
            raise ValidationFailed(message, {"fields": {"namespace": [message]}}) from exc

    @extend_schema(
        operation_id="store_item_delete",
        summary="Delete an item (204, also when there was none)",
        request=StoreDeleteSerializer,
        responses={204: None},
    )
    def delete(self, request: Request) -> Response:
        return self.write_item(store_delete, StoreDeleteSerializer)

    def write_item(self, write: Callable[..., object], serializer_class: type[Any]) -> Response:
        """A put or a delete: the body's item written (audited as this key's actor), answered 204."""
        write(workspace=self.workspace, actor=self.actor, **self.validated(serializer_class))
        return Response(status=status.HTTP_204_NO_CONTENT)


class StoreSearchView(ReadingPostView):
    @extend_schema(
        operation_id="store_items_search",
        summary="Items under a namespace prefix, filtered; ranked by meaning with a `query`",
        request=StoreSearchSerializer,
        responses=SearchItemsSerializer,
    )
    def post(self, request: Request) -> Response:
        data = self.validated(StoreSearchSerializer)
        found = store_search(workspace=self.workspace, **data)
        return Response({"items": [item_representation(item, score) for item, score in found]})


class StoreNamespacesView(ReadingPostView):
    @extend_schema(
        operation_id="store_namespaces_list",
        summary="Namespaces matching a prefix and suffix (`*`: any label), cut to max_depth",
        request=StoreNamespacesSerializer,
        responses=NamespacesSerializer,
    )
    def post(self, request: Request) -> Response:
        data = self.validated(StoreNamespacesSerializer)
        return Response({"namespaces": store_list_namespaces(workspace=self.workspace, **data)})


# A read key may batch reads; `put` operations need the write scope (checked below).
class StoreBatchView(ReadingPostView):
    @extend_schema(
        operation_id="store_batch",
        summary="LangGraph's batch: get, put, search, list_namespaces operations in order, a result each",
        request=StoreBatchSerializer,
        responses=StoreBatchResultSerializer,
    )
    def post(self, request: Request) -> Response:
        data = self.validated(StoreBatchSerializer)
        ops = data["ops"]
        if not self.api_key.has_scope(ApiKey.Scope.WRITE) and any(op["op"] == "put" for op in ops):
            raise PermissionDenied("A batch with put operations needs the 'write' scope.")
        return Response({"results": store_batch(workspace=self.workspace, actor=self.actor, ops=ops)})
