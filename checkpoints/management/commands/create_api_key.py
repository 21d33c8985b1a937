"""`manage.py create_api_key --workspace SLUG [--name N] [--scopes read,write,admin] [--throttle-rate R]`.

Creates the workspace if missing. The key is printed alone on the last line of stdout (script-friendly);
it is shown this once and never stored.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_slug

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import ApiKey, Workspace
from checkpoints.services.workspaces import api_key_create, throttle_rate_parse, workspace_get_or_create


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
        parser.add_argument(
            "--throttle-rate",
            default="",
            help="This key's rate limit, e.g. \"100/s\" (default: the server's).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["workspace"]
        max_slug = Workspace._meta.get_field("slug").max_length or 0
        try:
            validate_slug(slug)
            if len(slug) > max_slug:
                raise ValidationError("too long")
        except ValidationError as exc:
            raise CommandError(
                f"--workspace must be a slug of at most {max_slug} letters, digits, - and _, got {slug!r}."
            ) from exc
        name = options["name"].strip()
        max_name = ApiKey._meta.get_field("name").max_length or 0
        if not name or len(name) > max_name or "\x00" in name:
            raise CommandError(f"--name must be 1 to {max_name} characters.")
        scope = highest_scope(options["scopes"])
        rate = options["throttle_rate"].strip()
        if rate:
            try:
                throttle_rate_parse(rate)  # before anything is created
            except ValidationFailed as exc:
                raise CommandError(f"--throttle-rate: {exc.message}") from exc
        workspace, created = workspace_get_or_create(slug=slug)
        key, secret = api_key_create(workspace=workspace, name=name, scope=scope, throttle_rate=rate)
        if created:
            self.stderr.write(f"Created workspace {slug!r}.")
        self.stderr.write(f"Created {scope} key {key.prefix} ({key.name}) for workspace {slug!r}:")
        self.stdout.write(secret)
