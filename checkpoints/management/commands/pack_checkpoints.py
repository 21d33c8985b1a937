"""`manage.py pack_checkpoints [--workspace SLUG] [--batch-size N] [--dry-run]`: pack the checkpoints stored
whole before packing existed (docs/storage.md).

Runs `checkpoints.services.checkpoint_packing.checkpoints_pack`: keyset batches, each in its own
transaction; interrupt it and run it again to finish (rows already packed are skipped). Prints one line per
batch (the running totals), then the report as `name: value` lines. `--dry-run` reads the same rows and
prints the same report, writing nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from checkpoints.management.options import workspace_option
from checkpoints.models import Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoint_packing import (
    DEFAULT_BATCH_SIZE,
    PackReport,
    checkpoints_pack,
    checkpoints_pack_submit,
)

_UNITS = ("B", "KB", "MB", "GB", "TB")


def human_bytes(size: int) -> str:
    """1536 -> '1.5 KB' (powers of 1024; negative sizes keep their sign)."""
    magnitude, unit = float(abs(size)), 0
    while magnitude >= 1024 and unit < len(_UNITS) - 1:
        magnitude /= 1024
        unit += 1
    sign = "-" if size < 0 else ""
    return f"{sign}{magnitude:.0f} B" if unit == 0 else f"{sign}{magnitude:.1f} {_UNITS[unit]}"


class Command(BaseCommand):
    help = "Pack the large state and context of checkpoints stored whole (resumable; --dry-run to preview)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="Only this workspace (slug). Default: every workspace.")
        parser.add_argument(
            "--batch-size",
            type=int,
            default=DEFAULT_BATCH_SIZE,
            help=f"Rows per batch and transaction (default {DEFAULT_BATCH_SIZE}).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would be converted and saved; write nothing."
        )
        parser.add_argument(
            "--background",
            action="store_true",
            help="Queue one job per workspace for the workers instead (see the dashboard's Jobs page).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_option(options["workspace"])
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        if options["background"]:
            if options["dry_run"]:
                raise CommandError("--dry-run runs here; it cannot be combined with --background.")
            self._queue(workspace)
            return
        report = checkpoints_pack(
            workspace=workspace,
            batch_size=options["batch_size"],
            dry_run=options["dry_run"],
            on_batch=self._print_batch,
            actor=Actor.system("manage.py pack_checkpoints"),
        )
        self._print_report(report)

    def _queue(self, workspace: Workspace | None) -> None:
        workspaces = [workspace] if workspace is not None else Workspace.objects.order_by("pk")
        for each in workspaces:
            job = checkpoints_pack_submit(workspace=each, actor=Actor.system("manage.py pack_checkpoints"))
            self.stdout.write(f"queued job {job.job_id} for workspace {each.slug}")

    def _print_batch(self, report: PackReport) -> None:
        verb = "would convert" if report.dry_run else "converted"
        self.stdout.write(
            f"batch {report.batches}: up to pk {report.last_pk}; so far examined {report.examined}, "
            f"{verb} {report.converted}, {human_bytes(report.bytes_before)} -> "
            f"{human_bytes(report.bytes_after)}"
        )

    def _print_report(self, report: dict[str, Any]) -> None:
        if report["dry_run"]:
            self.stdout.write("dry run: nothing was written")
        self.stdout.write(f"examined: {report['examined']}")
        self.stdout.write(f"{'would_convert' if report['dry_run'] else 'converted'}: {report['converted']}")
        for name in ("bytes_before", "bytes_after", "bytes_saved"):
            self.stdout.write(f"{name}: {report[name]} ({human_bytes(report[name])})")
