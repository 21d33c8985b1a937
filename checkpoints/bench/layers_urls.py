"""Cairn's routes with two of the benchmark's in front (checkpoints.bench.layers): a Django view and a DRF
view that answer `{}` without doing anything, to measure what the layers under Cairn's views cost."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.views.base import WorkspaceAPIView
from project.urls import urlpatterns as cairn_urlpatterns


def django_only(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"{}", content_type="application/json")


class DrfOnly(WorkspaceAPIView):
    """Every API view's dispatch (authentication, scope, throttle, negotiation, rendering), and no work."""

    def get(self, request: Request) -> Response:
        return Response({})


urlpatterns = [
    path("api/v1/bench/django/", django_only),
    path("api/v1/bench/drf/", DrfOnly.as_view()),
    *cairn_urlpatterns,
]
