"""`manage.py create_api_key --workspace SLUG [--name N] [--scopes read,write,admin]`.

Creates the workspace if missing. The key is printed alone on the last line of stdout (script-friendly);
it is shown this once and never stored.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_slug

from checkpoints.models import ApiKey
from checkpoints.services.workspaces import api_key_create, workspace_get_or_create


def highest_scope(scopes: str) -> str:
    """'read,write' -> 'write' (scopes nest: read ⊂ write ⊂ admin)."""
    names = [s.strip() for s in scopes.split(",") if s.strip()]
    unknown = [s for s in names if s not in ApiKey.SCOPE_LEVELS]
    if not names or unknown:
        raise CommandError(f"--scopes takes a comma list of read, write, admin (got {scopes!r}).")
    return max(names, key=ApiKey.SCOPE_LEVELS.__getitem__)


class Command(BaseCommand):
    help = "Create an API key (and the workspace if missing); prints the key on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, help="Workspace slug.")
        parser.add_argument("--name", default="cli", help="A label for the key.")
        parser.add_argument("--scopes", default="read,write", help="read, write and/or admin (nested).")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["workspace"]
        try:
            validate_slug(slug)
        except ValidationError as exc:
            raise CommandError(
                f"--workspace must be a slug (letters, digits, - and _), got {slug!r}."
            ) from exc
        scope = highest_scope(options["scopes"])
        workspace, created = workspace_get_or_create(slug=slug)
        key, secret = api_key_create(workspace=workspace, name=options["name"], scope=scope)
        if created:
            self.stderr.write(f"Created workspace {slug!r}.")
        self.stderr.write(f"Created {scope} key {key.prefix} ({key.name}) for workspace {slug!r}:")
        self.stdout.write(secret)
