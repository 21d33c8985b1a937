"""The confirmation-page pattern every action follows."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import View

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.action_forms import ConfirmForm
from checkpoints.exceptions import CairnError
from checkpoints.models import Workspace


class ConfirmAction(View, ABC):
    """GET: the confirmation page. POST: validate, perform, flash the outcome, redirect.

    A domain error (expired checkpoint, pinned checkpoint, broker down, ...) re-renders the confirmation
    page with a friendly message and the error's status; nothing is half-done because every service is
    atomic.
    """

    http_method_names = ["get", "post"]
    form_class: type[forms.Form] = ConfirmForm
    title = ""
    button = "Confirm"
    danger = False
    template_name = "checkpoints/dashboard/confirm.html"

    def target(self, workspace: Workspace, **kwargs: Any) -> Any:
        """The object acted upon, looked up in `workspace` (NotFound otherwise)."""
        return workspace

    # What the action will do, in one or two sentences; `{target.…}` fields are filled in from the target.
    explanation_text = ""

    def explanation(self, target: Any) -> str:
        return self.explanation_text.format(target=target)

    # The two hooks every action defines.
    @abstractmethod
    def cancel_url(self, workspace: Workspace, target: Any) -> str:
        """Where "Cancel" (and a refused action) leads: the page the action was started from."""

    @abstractmethod
    def perform(self, workspace: Workspace, target: Any, form: forms.Form) -> HttpResponse:
        """Do it through one service call (atomic), flash the outcome, return the redirect."""

    def initial(self, target: Any) -> dict[str, Any]:
        return {}

    def make_form(self, target: Any, data: Any = None) -> forms.Form:
        """The action's form, bound to `data` on POST; an action whose choices depend on the target
        (the messages a fork can carry) builds it here."""
        if data is None:
            return self.form_class(initial=self.initial(target))
        return self.form_class(data)

    def extra_context(self, workspace: Workspace, target: Any, form: forms.Form) -> dict[str, Any]:
        """What an action's own template shows besides the form (a preview, the objects to pick from)."""
        return {}

    def render_page(
        self,
        workspace: Workspace,
        target: Any,
        form: forms.Form,
        error: CairnError | None = None,
        status: int | None = None,
    ) -> HttpResponse:
        context = {
            **self.extra_context(workspace, target, form),
            "workspace": workspace,
            "title": self.title,
            "target": target,
            "explanation": self.explanation(target),
            "form": form,
            "button": self.button,
            "danger": self.danger,
            "cancel_url": self.cancel_url(workspace, target),
            "action_error": error,
        }
        if status is None:
            status = error.status if error else 400 if form.is_bound else 200
        return render(self.request, self.template_name, context, status=status)

    def get(self, request: HttpRequest, workspace: Workspace, **kwargs: Any) -> HttpResponse:
        target = self.target(workspace, **kwargs)
        return self.render_page(workspace, target, self.make_form(target))

    def post(self, request: HttpRequest, workspace: Workspace, **kwargs: Any) -> HttpResponse:
        target = self.target(workspace, **kwargs)
        form = self.make_form(target, request.POST)
        if not form.is_valid():
            return self.render_page(workspace, target, form)
        try:
            return self.perform(workspace, target, form)
        except CairnError as error:
            return self.render_page(workspace, target, form, error)

    def success(self, text: str) -> None:
        messages.success(self.request, text)

    @classmethod
    def view(cls) -> Any:
        """The URL-ready view: staff only, workspace resolved (404 if not the user's)."""
        return workspace_view(cls.as_view())


class PinOrUnpin:
    """Mixed into an action that pins its target: a subclass with `pinned = False` unpins it instead, with
    its own `title`, `button` and `explanation_text`."""

    pinned = True

    @property
    def pin_verb(self) -> str:
        """How the outcome message says what was done."""
        return "pinned" if self.pinned else "unpinned"
