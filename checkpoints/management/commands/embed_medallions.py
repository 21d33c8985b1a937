"""`manage.py embed_medallions [--batch-size N]`: embed the medallions that have no vector yet (written
before search by meaning existed, or whose embedding task never ran), with the configured embedder.

Run it once after upgrading, or after switching embedding models (docs/medallions.md, "Search by meaning").
Prints `embedded: N`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from checkpoints.services.medallion_vectors import medallions_embed_missing


class Command(BaseCommand):
    help = "Embed the medallions without a vector, for search by meaning."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=64, help="Medallions per embedder call.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        self.stdout.write(f"embedded: {medallions_embed_missing(batch_size=options['batch_size'])}")
