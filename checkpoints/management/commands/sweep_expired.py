"""`manage.py sweep_expired [--workspace SLUG] [--batch-size N] [--all] [--dry-run]`: one retention sweep now.

The same service the beat schedule runs every minute. `--all` also runs the hourly work (tombstone purge and
idle-thread expiry); `--dry-run` prints the preview instead and changes nothing. Counts go to stdout as
`name: value` lines.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from checkpoints.management.options import workspace_option
from checkpoints.models import Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.retention import (
    retention_preview,
    retention_sweep,
    threads_expire_idle,
    tombstones_purge,
)


class Command(BaseCommand):
    help = "Run one retention sweep now (expired and beyond-keep-latest checkpoints become tombstones)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="Only this workspace (slug). Default: every workspace.")
        parser.add_argument(
            "--batch-size", type=int, help="Rows per transaction (default CAIRN_SWEEP_BATCH_SIZE)."
        )
        parser.add_argument(
            "--all",
            action="store_true",
            help="Also purge old tombstones and expire idle threads (all workspaces).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Print what would happen; change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_option(options["workspace"])
        if options["batch_size"] is not None and options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        if options["dry_run"]:
            workspaces = [workspace] if workspace else list(Workspace.objects.order_by("slug"))
            for each in workspaces:
                self.stdout.write(f"{each.slug}: {json.dumps(retention_preview(workspace=each), indent=2)}")
            return
        counts: dict[str, int] = dict(
            retention_sweep(
                workspace=workspace,
                batch_size=options["batch_size"],
                actor=Actor.system("manage.py sweep_expired"),
            )
        )
        if options["all"]:
            counts["purged"] = tombstones_purge(batch_size=options["batch_size"])
            counts["idle_threads"] = threads_expire_idle()
        for name, value in counts.items():
            self.stdout.write(f"{name}: {value}")
