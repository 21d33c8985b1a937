"""`manage.py verify_integrity [--workspace SLUG]`: re-hash every stored checkpoint and every stored part of
packed checkpoints (docs/storage.md); exit 1 on any mismatch.

A part whose text no longer hashes to its digest is reported as `MISMATCH value workspace=… digest=<hex>`;
every checkpoint naming it then fails its checksum too, and its line names the altered parts. A packed
checkpoint naming a part that is not stored fails its checksum too, and its line names the missing parts.
A pending write whose packed value names a part that is missing or altered is reported as `MISMATCH write
…` with the parts it names so, after a line counting the packed writes (only when there are some).
The last line always counts the checkpoints; the line counting the stored values comes before the
checkpoints' lines, and only when there are stored values.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db.models import QuerySet

from checkpoints.management.options import workspace_option
from checkpoints.models import Checkpoint, PendingWrite, StoredValue
from checkpoints.models.value import PACKED_FIELDS, parts_of
from checkpoints.packing import digests, matches
from checkpoints.services.checkpoints import checkpoint_verify
from checkpoints.storage.stored_values import packed_writes

BATCH = 500
# Parts are up to 1 MB each: smaller batches keep the command's memory flat.
VALUE_BATCH = 100


class Command(BaseCommand):
    help = (
        "Re-hash every stored checkpoint and stored part, and report the ones that no longer match "
        "(checkpoints whose checksum fails, parts whose digest fails, parts that are missing)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="Only this workspace (slug).")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_option(options["workspace"])
        values = StoredValue.objects.all()
        checkpoints = Checkpoint.objects.filter(expired_at__isnull=True).select_related("thread", "workspace")
        if workspace is not None:
            values, checkpoints = values.filter(workspace=workspace), checkpoints.filter(workspace=workspace)
        altered, values_checked = self._verify_values(values)
        altered_count = sum(len(found) for found in altered.values())
        if values_checked:
            self.stdout.write(f"checked {values_checked} stored values, {altered_count} mismatched")
        writes = PendingWrite.objects.filter(packed_writes())
        if workspace is not None:
            writes = writes.filter(thread__workspace=workspace)
        writes_checked, writes_mismatched = self._verify_writes(writes, altered)
        if writes_checked:
            self.stdout.write(f"checked {writes_checked} packed writes, {writes_mismatched} mismatched")
        checked, mismatched = self._verify_checkpoints(checkpoints, altered)
        self.stdout.write(f"checked {checked} checkpoints, {mismatched} mismatched")
        if mismatched or altered_count or writes_mismatched:
            sys.exit(1)

    def _verify_values(self, values: QuerySet[StoredValue]) -> tuple[dict[int, set[bytes]], int]:
        """Re-hash every part; returns the digests of the altered ones per workspace (pk), and the count."""
        altered: dict[int, set[bytes]] = defaultdict(set)
        checked = last_pk = 0
        while True:
            batch = list(
                values.filter(pk__gt=last_pk)
                .order_by("pk")
                .values_list("pk", "workspace_id", "workspace__slug", "digest", "body")[:VALUE_BATCH]
            )
            if not batch:
                break
            for _, workspace_id, slug, digest, body in batch:
                checked += 1
                if not matches(bytes(digest), body):
                    altered[workspace_id].add(bytes(digest))
                    self.stdout.write(f"MISMATCH value workspace={slug} digest={bytes(digest).hex()}")
            last_pk = batch[-1][0]
        return altered, checked

    def _verify_writes(
        self, writes: QuerySet[PendingWrite], altered: dict[int, set[bytes]]
    ) -> tuple[int, int]:
        """Check that the parts every packed write names are stored and intact (one query per batch and
        workspace); returns (checked, mismatched)."""
        checked = mismatched = last_pk = 0
        columns = ("thread__workspace_id", "thread__workspace__slug", "thread__thread_id", "namespace")
        while batch := list(
            writes.filter(pk__gt=last_pk)
            .order_by("pk")
            .values_list("pk", *columns, "checkpoint_id", "task_id", "idx", "value")[:BATCH]
        ):
            named = [digests([row[-1]]) for row in batch]
            wanted: dict[int, set[bytes]] = defaultdict(set)
            for row, parts in zip(batch, named, strict=True):
                wanted[row[1]] |= parts
            present = {
                workspace_id: parts_of(workspace_id, parts).keys() for workspace_id, parts in wanted.items()
            }
            for (_, workspace_id, slug, thread_id, namespace, checkpoint_id, task_id, idx, _), parts in zip(
                batch, named, strict=True
            ):
                checked += 1
                problems = {
                    "missing_parts": parts - present[workspace_id],
                    "altered_parts": parts & altered[workspace_id],
                }
                listed = " ".join(
                    f"{label}=" + ",".join(sorted(d.hex() for d in found))
                    for label, found in problems.items()
                    if found
                )
                if listed:
                    mismatched += 1
                    self.stdout.write(
                        f"MISMATCH write workspace={slug} thread={thread_id} namespace={namespace!r} "
                        f"checkpoint={checkpoint_id} task={task_id} idx={idx} {listed}"
                    )
            last_pk = batch[-1][0]
        return checked, mismatched

    def _verify_checkpoints(
        self, checkpoints: QuerySet[Checkpoint], altered: dict[int, set[bytes]]
    ) -> tuple[int, int]:
        """Re-hash every live checkpoint (its packed documents filled in); returns (checked, mismatched)."""
        checked = mismatched = last_pk = 0
        while True:
            # Keyset batches: constant memory, and no OFFSET scans on big tables.
            batch = list(checkpoints.filter(pk__gt=last_pk).order_by("pk")[:BATCH])
            if not batch:
                break
            for checkpoint in batch:
                checked += 1
                if not checkpoint_verify(checkpoint):
                    mismatched += 1
                    self.stdout.write(self._mismatch_line(checkpoint, altered.get(checkpoint.workspace_id)))
            last_pk = batch[-1].pk
        return checked, mismatched

    def _mismatch_line(self, checkpoint: Checkpoint, altered: set[bytes] | None) -> str:
        """The checkpoint's MISMATCH line, naming the parts it names that are missing or altered."""
        line = (
            f"MISMATCH workspace={checkpoint.workspace.slug} thread={checkpoint.thread.thread_id} "
            f"namespace={checkpoint.namespace!r} checkpoint={checkpoint.checkpoint_id}"
        )
        named = self._named_parts(checkpoint)
        if not named:
            return line
        rows = StoredValue.objects.filter(workspace_id=checkpoint.workspace_id, digest__in=list(named))
        present = {bytes(digest) for digest in rows.values_list("digest", flat=True)}
        problems = (("missing_parts", named - present), ("altered_parts", named & (altered or set())))
        for label, found in problems:
            if found:
                line += f" {label}=" + ",".join(sorted(digest.hex() for digest in found))
        return line

    @staticmethod
    def _named_parts(checkpoint: Checkpoint) -> set[bytes]:
        """The parts the checkpoint's packed documents name, read again as stored (not filled in)."""
        stored = Checkpoint.objects.filter(pk=checkpoint.pk).values_list(*PACKED_FIELDS).first() or ()
        return digests(stored)
