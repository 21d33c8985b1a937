"""API key actions: create (the secret is shown once, on the response to the POST) and revoke."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.action_forms import ApiKeyCreateForm
from checkpoints.dashboard.views.actions.base import ConfirmAction
from checkpoints.exceptions import NotFound
from checkpoints.models import ApiKey, Workspace
from checkpoints.services.workspaces import api_key_create, api_key_revoke


def keys_url(workspace: Workspace) -> str:
    return reverse("dashboard:keys", kwargs={"slug": workspace.slug})


class KeyAction(ConfirmAction):
    """An action started from the workspace's API keys page, which it leads back to."""

    def cancel_url(self, workspace: Workspace, target: Any) -> str:
        return keys_url(workspace)


class ApiKeyCreateAction(KeyAction):
    form_class = ApiKeyCreateForm
    title = "Create an API key"
    button = "Create key"
    explanation_text = (
        "The key works for workspace {target.slug} only. Its secret is shown once, on the next page: "
        "Cairn stores only a hash of it."
    )

    def perform(self, workspace: Workspace, target: Workspace, form: forms.Form) -> HttpResponse:
        assert isinstance(form, ApiKeyCreateForm)
        key, secret = api_key_create(
            workspace=workspace, actor=actor_for(self.request), **form.service_arguments()
        )
        response = render(
            self.request,
            "checkpoints/dashboard/api_key_created.html",
            {"workspace": workspace, "title": "API key created", "nav": "keys", "key": key, "secret": secret},
        )
        # The secret exists nowhere else: no cache (browser or proxy) may keep this page.
        response["Cache-Control"] = "no-store"
        return response


class ApiKeyRevokeAction(KeyAction):
    title = "Revoke this API key"
    button = "Revoke key"
    danger = True
    explanation_text = (
        "Requests with key {target.prefix}… ({target.name}) are refused from the next request on."
    )

    def target(self, workspace: Workspace, **kwargs: Any) -> ApiKey:
        key = ApiKey.objects.filter(workspace=workspace, prefix=kwargs["prefix"]).first()
        if key is None:
            raise NotFound("No such API key in this workspace.")
        return key

    def perform(self, workspace: Workspace, target: ApiKey, form: forms.Form) -> HttpResponse:
        api_key_revoke(api_key=target, actor=actor_for(self.request))
        self.success(f"Key {target.prefix}… ({target.name}) revoked.")
        return HttpResponseRedirect(keys_url(workspace))
