"""What `manage.py bench` runs, in order, and with which sizes (full or `--quick`)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from checkpoints.bench import ab, graphs, layers, profiling, saves, scale, server, storage, sweep
from checkpoints.bench.loader import workspace_pk
from checkpoints.bench.saves import ApiClients, SaveCase

# The packages a run's speed depends on: recorded with each run, so runs of different days compare.
MEASURED_PACKAGES = (
    "Django",
    "djangorestframework",
    "gunicorn",
    "psycopg",
    "redis",
    "aiohttp",
    "langgraph",
    "langgraph-checkpoint-postgres",
)
SECTIONS = ("storage", "langgraph", "saves", "layers", "profile", "scale", "sweep")
FLOOR_APP = "checkpoints.bench.floor"
KB, MB = 1024, 1024 * 1024


# (payload size, concurrent clients, saves per client in a full run, in a --quick run)
SAVE_PLAN = (
    (2 * KB, 1, 1000, 20),
    (2 * KB, 16, 100, 2),
    (100 * KB, 1, 300, 5),
    (100 * KB, 16, 30, 1),
    (1 * MB, 1, 60, 3),
    (1 * MB, 16, 8, 1),
)


def full_save_cases() -> list[SaveCase]:
    return [SaveCase(size, clients, full) for size, clients, full, _ in SAVE_PLAN]


def quick_save_cases() -> list[SaveCase]:
    return [SaveCase(size, clients, quick) for size, clients, _, quick in SAVE_PLAN]


@dataclass
class BenchConfig:
    workers: int = 4
    save_cases: list[SaveCase] = field(default_factory=full_save_cases)
    graph_steps: int = 50
    graph_runs: int = 10
    graph_turns: int = 100
    chat_turns: list[int] = field(default_factory=lambda: [200, 1000])
    scale_sizes: list[int] = field(default_factory=lambda: [10_000, 1_000_000])
    scale_requests: int = 300
    hot_rows: int = 2000
    sweep_rows: int = 1_000_000
    sweep_idle_seconds: float = 15.0
    profile_requests: int = 300
    layer_requests: int = 1000
    sections: tuple[str, ...] = SECTIONS
    ab_parts: tuple[str, ...] = ()  # --ab: these parts on and off in turns, instead of the sections
    ab_rounds: int = 2
    quick_run: bool = False

    @classmethod
    def quick(cls, **overrides: Any) -> BenchConfig:
        """Every section at toy sizes: a smoke run (the test suite runs it so the benchmark never rots)."""
        values: dict[str, Any] = {
            "workers": 2,
            "save_cases": quick_save_cases(),
            "graph_steps": 10,
            "graph_runs": 2,
            "graph_turns": 5,
            "chat_turns": [10, 30],
            "scale_sizes": [1000, 3000],
            "scale_requests": 20,
            "hot_rows": 200,
            "sweep_rows": 2000,
            "sweep_idle_seconds": 1.0,
            "profile_requests": 30,
            "layer_requests": 20,
            "quick_run": True,
        }
        values.update(overrides)
        return cls(**values)


def _postgres_version(url: str) -> str:
    # The maintenance database: the one DATABASE_URL names need not exist (the benchmark never uses it).
    with psycopg.connect(server.with_database(url, "postgres")) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]).split()[0] if row else "?"


def package_versions() -> dict[str, str]:
    """The installed version of each of MEASURED_PACKAGES ("not installed" for one that is missing)."""
    versions = {}
    for name in MEASURED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def run(
    config: BenchConfig,
    *,
    server_url: str,
    redis_url: str,
    database: str,
    keep_database: bool,
    command: str,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Create the benchmark database, serve it with gunicorn and run the configured sections."""
    results: dict[str, Any] = {
        "started_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "postgres": _postgres_version(server_url),
            "packages": package_versions(),
        },
        "config": {**asdict(config), "save_cases": [asdict(case) for case in config.save_cases]},
    }
    with tempfile.TemporaryDirectory(prefix="cairn-bench-") as tmp:
        if "storage" in config.sections:
            # First, and each saver on a fresh database of its own: growth read on tables nothing else wrote.
            results["storage"] = [
                storage.bench_storage(
                    server_url=server_url,
                    redis_url=redis_url,
                    database=database,
                    turns=turns,
                    workers=config.workers,
                    root=Path(tmp),
                    log=log,
                )
                for turns in config.chat_turns
            ]
        if set(config.sections) - {"storage"} or config.ab_parts:
            _served(
                config,
                results,
                server_url=server_url,
                redis_url=redis_url,
                database=database,
                keep_database=keep_database,
                root=Path(tmp),
                log=log,
            )
    return results


def _served(
    config: BenchConfig,
    results: dict[str, Any],
    *,
    server_url: str,
    redis_url: str,
    database: str,
    keep_database: bool,
    root: Path,
    log: Callable[[str], None],
) -> None:
    """The sections that share one benchmark database and one gunicorn serving it."""
    with server.bench_database(server_url, database, keep=keep_database) as database_url:
        stack = server.Stack.create(database_url, redis_url, root)
        log(f"benchmark database {database}; migrating")
        stack.manage("migrate", "--no-input")
        api = ApiClients("", stack.api_key("bench"))
        try:
            with contextlib.ExitStack() as servers:
                web = servers.enter_context(server.Gunicorn(stack, workers=config.workers))
                api.base_url = web.url
                log(f"gunicorn ({config.workers} workers) at {web.url}")
                results["servers"] = {"cairn": shlex.join(web.argv()[2:])}
                floor = None
                if {"saves", "layers"} & set(config.sections) or config.ab_parts:
                    # Served alongside Cairn; the saves and layers sections drive one of them at a time.
                    floor = servers.enter_context(
                        server.Gunicorn(stack, workers=config.workers, app=FLOOR_APP)
                    )
                    saves.raw_table_create(database_url)  # the floor's table
                    log(f"the floor ({config.workers} workers) at {floor.url}")
                    results["servers"]["floor"] = shlex.join(floor.argv()[2:])
                _sections(
                    config,
                    results,
                    api=api,
                    stack=stack,
                    database_url=database_url,
                    floor=floor,
                    log=log,
                )
        finally:
            stack.forget_cache()


def _sections(
    config: BenchConfig,
    results: dict[str, Any],
    *,
    api: ApiClients,
    stack: server.Stack,
    database_url: str,
    floor: server.Gunicorn | None,
    log: Callable[[str], None],
) -> None:
    if "langgraph" in config.sections:
        log(
            f"  langgraph: {config.graph_steps}-step graph x {config.graph_runs} runs per saver, "
            f"a {config.graph_turns}-turn chat each"
        )
        results["langgraph"] = graphs.bench_graph_steps(
            database_url=database_url,
            base_url=api.base_url,
            api_key=api.api_key,
            steps=config.graph_steps,
            runs=config.graph_runs,
            turns=config.graph_turns,
        )
    if "saves" in config.sections and floor is not None:
        results["saves"] = saves.bench_saves(
            api=api, floor_url=floor.url, database_url=database_url, cases=config.save_cases, log=log
        )
    if config.ab_parts and floor is not None:
        results["ab"] = ab.bench_ab(
            stack=stack,
            workers=config.workers,
            api_key=api.api_key,
            floor_url=floor.url,
            parts=config.ab_parts,
            rounds=config.ab_rounds,
            quick=config.quick_run,
            log=log,
        )
    if "layers" in config.sections and floor is not None:
        results["layers"] = layers.bench_layers(
            stack=stack,
            floor=floor,
            workers=config.workers,
            api_key=api.api_key,
            requests=config.layer_requests,
            log=log,
        )
    # In-process, while the served Cairn idles; before scale and sweep leave autovacuum busy.
    if "profile" in config.sections:
        results["profile"] = profiling.bench_profile(
            stack=stack, api_key=api.api_key, requests=config.profile_requests, log=log
        )
    if "scale" in config.sections:
        results["scale"] = scale.bench_scale(
            api=api,
            database_url=database_url,
            workspace_pk=workspace_pk(database_url, "bench"),
            sizes=config.scale_sizes,
            requests=config.scale_requests,
            hot_rows=config.hot_rows,
            forget_cache=stack.forget_cache,
            log=log,
        )
    if "sweep" in config.sections:
        results["sweep"] = sweep.bench_sweep(
            base_url=api.base_url,
            stack=stack,
            database_url=database_url,
            rows=config.sweep_rows,
            idle_seconds=config.sweep_idle_seconds,
            log=log,
        )
