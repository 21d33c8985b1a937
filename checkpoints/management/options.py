"""Command-line options several management commands share."""

from __future__ import annotations

from django.core.management.base import CommandError

from checkpoints.models import Workspace


def workspace_option(slug: str | None) -> Workspace | None:
    """The workspace `--workspace SLUG` names (None without the option); CommandError if none has it."""
    if not slug:
        return None
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise CommandError(f"No workspace {slug!r}.")
    return workspace
