"""`manage.py verify_integrity [--workspace SLUG]`: re-hash every stored checkpoint; exit 1 on a mismatch."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from checkpoints.models import Checkpoint, Workspace
from checkpoints.services.checkpoints import checkpoint_verify

BATCH = 500


class Command(BaseCommand):
    help = "Re-hash every stored checkpoint and report the ones that no longer match their checksum."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="Only this workspace (slug).")

    def handle(self, *args: Any, **options: Any) -> None:
        queryset = Checkpoint.objects.filter(expired_at__isnull=True).select_related("thread", "workspace")
        if options["workspace"]:
            workspace = Workspace.objects.filter(slug=options["workspace"]).first()
            if workspace is None:
                raise CommandError(f"No workspace {options['workspace']!r}.")
            queryset = queryset.filter(workspace=workspace)
        checked = mismatched = 0
        last_pk = 0
        while True:
            # Keyset batches: constant memory, and no OFFSET scans on big tables.
            batch = list(queryset.filter(pk__gt=last_pk).order_by("pk")[:BATCH])
            if not batch:
                break
            for checkpoint in batch:
                checked += 1
                if not checkpoint_verify(checkpoint):
                    mismatched += 1
                    self.stdout.write(
                        f"MISMATCH workspace={checkpoint.workspace.slug} "
                        f"thread={checkpoint.thread.thread_id} "
                        f"namespace={checkpoint.namespace!r} checkpoint={checkpoint.checkpoint_id}"
                    )
            last_pk = batch[-1].pk
        self.stdout.write(f"checked {checked} checkpoints, {mismatched} mismatched")
        if mismatched:
            sys.exit(1)
