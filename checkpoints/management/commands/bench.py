"""`manage.py bench [--quick] [--workers N] [--only SECTIONS] ...`: Cairn measured against raw PostgreSQL, a
framework-less WSGI floor and LangGraph's AsyncPostgresSaver, on the production setup (the Procfile's
gunicorn, PostgreSQL, Redis), what each layer of a served request costs (Django, DRF, Cairn's own work), and
an in-process profile of one save and one restore. See checkpoints.bench. `--ab PART[,PART...] [--rounds N]`
measures instead what each performance part saves, with it on and off in turns (checkpoints.bench.ab).

Prints the tables and writes `bench-results/bench-<timestamp>.json` (and `latest.json`).
"""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from checkpoints.bench import report, runner, server
from checkpoints.parts import PARTS

NEEDS_SERVICES = (
    "manage.py bench measures the production setup and needs both services: set DATABASE_URL=postgres://... "
    "(it creates and drops a database of its own on that server) and REDIS_URL=redis://... (keys under a "
    "per-run prefix, deleted afterwards)."
)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise CommandError(f"--scale-sizes takes a comma list of row counts, got {text!r}") from exc
    if not sizes or any(size < 100 for size in sizes) or sizes != sorted(sizes):
        raise CommandError("--scale-sizes must be increasing row counts of at least 100, e.g. 10000,1000000")
    return sizes


def _sections(text: str) -> tuple[str, ...]:
    sections = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = sorted(set(sections) - set(runner.SECTIONS))
    if unknown or not sections:
        raise CommandError(f"--only takes {', '.join(runner.SECTIONS)}; unknown: {', '.join(unknown)}")
    return sections


def _parts(text: str) -> tuple[str, ...]:
    parts = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    unknown = sorted(set(parts) - PARTS.keys())
    if unknown or not parts:
        raise CommandError(f"--ab takes {', '.join(PARTS)}; unknown: {', '.join(unknown)}")
    return parts


def bench_config(options: dict[str, Any]) -> runner.BenchConfig:
    """The configuration the options ask for (CommandError on a bad value)."""
    overrides: dict[str, Any] = {}
    if options["workers"] is not None:
        if options["workers"] < 1:
            raise CommandError("--workers must be at least 1.")
        overrides["workers"] = options["workers"]
    if options["only"]:
        overrides["sections"] = _sections(options["only"])
    if options["ab"]:
        if options["only"]:
            raise CommandError("--ab runs its own measurements; leave out --only.")
        if options["rounds"] < 1:
            raise CommandError("--rounds must be at least 1.")
        overrides.update(sections=(), ab_parts=_parts(options["ab"]), ab_rounds=options["rounds"])
    if options["scale_sizes"]:
        overrides["scale_sizes"] = _sizes(options["scale_sizes"])
    if options["sweep_rows"] is not None:
        if options["sweep_rows"] < 100:
            raise CommandError("--sweep-rows must be at least 100.")
        overrides["sweep_rows"] = options["sweep_rows"]
    return runner.BenchConfig.quick(**overrides) if options["quick"] else runner.BenchConfig(**overrides)


class Command(BaseCommand):
    help = (
        "Benchmark Cairn against raw psycopg and LangGraph's AsyncPostgresSaver (needs PostgreSQL + Redis)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--quick", action="store_true", help="Every section at toy sizes (a smoke run).")
        parser.add_argument("--workers", type=int, help="gunicorn worker processes (default 4; --quick: 2).")
        parser.add_argument("--only", help=f"Comma list of sections to run: {', '.join(runner.SECTIONS)}.")
        parser.add_argument(
            "--ab",
            help=f"Parts to measure on and off in turns, instead of the sections: {', '.join(PARTS)}.",
        )
        parser.add_argument("--rounds", type=int, default=2, help="--ab: turns with each part on and off.")
        parser.add_argument("--scale-sizes", help="Row counts for the read paths (default 10000,1000000).")
        parser.add_argument("--sweep-rows", type=int, help="Expired checkpoints to sweep (default 1000000).")
        parser.add_argument(
            "--database", default="cairn_bench", help="Benchmark database (created, dropped)."
        )
        parser.add_argument("--keep-database", action="store_true", help="Leave the benchmark database.")
        parser.add_argument("--output", default="bench-results", help="Directory for the JSON results.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DATABASE_URL.startswith(("postgres://", "postgresql://")) or not settings.REDIS_URL:
            raise CommandError(NEEDS_SERVICES)
        if server.database_name(settings.DATABASE_URL) == options["database"]:
            raise CommandError(
                f"--database {options['database']} is DATABASE_URL's own database; pick another."
            )
        config = bench_config(options)
        # The load generators' HTTP clients log every request at INFO; the tables are the output.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        argv = sys.argv[2:] if sys.argv[1:2] == ["bench"] else []
        results = runner.run(
            config,
            server_url=settings.DATABASE_URL,
            redis_url=settings.REDIS_URL,
            database=options["database"],
            keep_database=options["keep_database"],
            command=f"manage.py bench {shlex.join(argv)}".strip(),
            log=lambda line: self.stderr.write(line),
        )
        path = report.write_json(results, Path(options["output"]))
        self.stdout.write(report.render(results))
        self.stdout.write(f"JSON: {path}")
