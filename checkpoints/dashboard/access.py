"""Who may see what: staff only, and only the workspaces a user is a member of (superusers: all).

Every dashboard view goes through `staff_view` or `workspace_view`. A workspace the user cannot see is a
404, exactly like one that does not exist, so its existence does not leak.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render

from checkpoints.exceptions import CairnError
from checkpoints.models import Workspace
from checkpoints.services.audit import Actor

View = Callable[..., HttpResponseBase]


def user_workspaces(request: HttpRequest) -> Any:
    """The workspaces the request's user may open, for the workspace switcher."""
    return Workspace.objects.for_user(request.user).order_by("slug")


def workspace_or_404(request: HttpRequest, slug: str) -> Workspace:
    workspace = Workspace.objects.for_user(request.user).filter(slug=slug).first()
    if workspace is None:
        raise Http404("No such workspace.")
    return workspace


def actor_for(request: HttpRequest) -> Actor:
    """The audit actor of a dashboard action: the logged-in user."""
    return Actor.for_user(request.user)


def error_page(request: HttpRequest, error: CairnError, workspace: Workspace | None = None) -> HttpResponse:
    """A domain error as a friendly page with the error's own status (never a 500)."""
    context = {"error": error, "workspace": workspace, "title": "Something needs your attention"}
    return render(request, "checkpoints/dashboard/error.html", context, status=error.status)


def staff_view(view: View) -> View:
    """Anonymous users go to the login page; logged-in users who are not active staff get 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        user = request.user
        if not user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (user.is_active and user.is_staff):
            raise PermissionDenied("The dashboard is for staff accounts.")
        return view(request, *args, **kwargs)

    return wrapper


def workspace_view(view: View) -> View:
    """`staff_view` plus the `slug` URL argument resolved to a workspace the user may see (else 404).

    The view receives the workspace as its second argument. Domain errors raised while building the page
    become a friendly page with their status.
    """

    @staff_view
    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponseBase:
        workspace = workspace_or_404(request, slug)
        try:
            return view(request, workspace, *args, **kwargs)
        except CairnError as error:
            return error_page(request, error, workspace)

    return wrapper
