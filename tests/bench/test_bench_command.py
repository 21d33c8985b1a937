"""`manage.py bench`: refuses to measure anything but the production setup, and its `--quick` smoke run
exercises every section end to end (gunicorn, a database of its own, Redis), so the benchmark never rots."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import django
import psycopg
import pytest
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings as SettingsWrapper

from checkpoints.bench.server import database_name, with_database
from checkpoints.bench.stats import Sample, percentile, run_clients

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("database_url", "redis_url"),
    [
        ("", "redis://127.0.0.1:6379/0"),
        ("postgres://postgres@127.0.0.1/x", ""),
        ("sqlite:///x.db", "redis://x"),
    ],
)
def test_it_refuses_to_run_without_postgresql_and_redis(
    settings: SettingsWrapper, database_url: str, redis_url: str
) -> None:
    settings.DATABASE_URL, settings.REDIS_URL = database_url, redis_url
    with pytest.raises(CommandError, match="needs both services: set DATABASE_URL=postgres://"):
        call_command("bench", "--quick")


def test_it_refuses_to_use_the_configured_database_as_its_own(settings: SettingsWrapper) -> None:
    settings.DATABASE_URL, settings.REDIS_URL = "postgres://postgres@127.0.0.1/cairn", "redis://127.0.0.1/0"
    with pytest.raises(CommandError, match="DATABASE_URL's own database"):
        call_command("bench", "--database", "cairn")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--only", "saves,nope", "unknown: nope"),
        ("--scale-sizes", "1000,10", "increasing row counts"),
        ("--scale-sizes", "ten", "comma list of row counts"),
        ("--workers", "0", "at least 1"),
        ("--sweep-rows", "5", "at least 100"),
        ("--ab", "thread_memo,nope", "unknown: nope"),
    ],
)
def test_it_refuses_bad_options_before_touching_anything(
    settings: SettingsWrapper, option: str, value: str, message: str
) -> None:
    settings.DATABASE_URL, settings.REDIS_URL = "postgres://postgres@127.0.0.1/cairn", "redis://127.0.0.1/0"
    with pytest.raises(CommandError, match=message):
        call_command("bench", option, value)


@pytest.mark.parametrize(
    ("extra", "message"), [(["--only", "saves"], "leave out --only"), (["--rounds", "0"], "at least 1")]
)
def test_it_refuses_ab_runs_it_cannot_make(settings: SettingsWrapper, extra: list[str], message: str) -> None:
    settings.DATABASE_URL, settings.REDIS_URL = "postgres://postgres@127.0.0.1/cairn", "redis://127.0.0.1/0"
    with pytest.raises(CommandError, match=message):
        call_command("bench", "--ab", "thread_memo", *extra)


def test_it_computes_nearest_rank_percentiles() -> None:
    values = [float(n) for n in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (50.0, 99.0, 100.0)
    assert percentile([3.0], 0.99) == 3.0
    assert percentile([], 0.5) == 0.0
    sample = Sample([0.001, 0.003], wall=0.5)
    assert sample.summary() == {"n": 2, "p50_ms": 1.0, "p99_ms": 3.0, "mean_ms": 2.0, "ops_per_s": 4.0}


def test_it_runs_every_client_for_every_operation_and_reraises_a_failure() -> None:
    calls: list[tuple[int, int]] = []
    sample = run_clients(3, 4, lambda client: lambda n: calls.append((client, n)))
    assert sorted(calls) == [(c, n) for c in range(3) for n in range(4)]
    assert len(sample.latencies) == 12 and sample.wall > 0

    def failing(client: int) -> Any:
        def op(n: int) -> None:
            if client == 1 and n == 2:
                raise RuntimeError("client 1 failed")

        return op

    with pytest.raises(RuntimeError, match="client 1 failed"):
        run_clients(2, 5, failing)


def bench(tmp_path: Path, *options: str) -> tuple[str, str]:
    """`manage.py bench --quick <options>` on a database of its own: its output and that database's name."""
    bench_db = f"{database_name(os.environ['DATABASE_URL']) or 'cairn'}_benchsmoke_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "SECRET_KEY": "bench-smoke-test", "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "bench", "--quick", *options, "--database", bench_db,
         "--output", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout, bench_db


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_it_measures_every_section_in_a_quick_run(tmp_path: Path) -> None:
    server_url = os.environ["DATABASE_URL"]
    stdout, bench_db = bench(tmp_path)
    for title in ("HTTP API vs raw psycopg", "against the floor", "One request in-process",
                  "AsyncPostgresSaver", "Storage of a 10-turn conversation",
                  "Read paths at 1,000 and 3,000 rows", "while a sweep tombstones 2,000",
                  "Each layer of a served request"):  # fmt: skip
        assert title in stdout, stdout
    results = json.loads((tmp_path / "latest.json").read_text())
    assert results["command"].startswith("manage.py bench --quick")
    packages = results["machine"]["packages"]
    assert packages["Django"] == django.get_version() and packages["psycopg"] == psycopg.__version__
    assert f"packages: Django {django.get_version()}, " in stdout

    saves = results["saves"]
    assert {(row["size"], row["clients"], row["op"]) for row in saves} == {
        (size, clients, op)
        for size in ("2 KB", "100 KB", "1 MB")
        for clients in (1, 16)
        for op in ("save", "restore")
    }
    for row in saves:
        assert row["api"]["n"] == row["raw"]["n"] == row["floor"]["n"] > 0
        assert row["api"]["p50_ms"] > 0 and row["raw"]["p50_ms"] > 0 and row["ratio_p50"] > 0
        # The floor is served like Cairn and measured in turns with it: positive ratios both ways.
        assert row["floor"]["p50_ms"] > 0 and row["floor"]["ops_per_s"] > 0
        assert (
            row["floor_ratio_p50"] > 0 and row["floor_throughput_pct"] > 0 and row["floor_over_raw_p50"] > 0
        )
    layer_rows = results["layers"]["layers"]
    assert [row["layer"] for row in layer_rows] == [
        "the floor: restore", "Django + Cairn's middleware", "+ DRF: key, scope, throttle", "Cairn: restore",
        "the floor: save", "Cairn: save",
    ]  # fmt: skip
    for row in layer_rows:
        assert row["n"] == 20 and row["p50_ms"] > 0 and row["p50_vs_floor"] > 0
        assert row["server_cpu_us"] is not None and row["server_cpu_us"] >= 0
    # Both served by the Procfile's web command; only the app (and the free port) differ.
    commands = {name: re.sub(r":\d+ ", ":PORT ", line) for name, line in results["servers"].items()}
    assert commands["floor"] == commands["cairn"].replace("project.wsgi", "checkpoints.bench.floor")

    profile = results["profile"]
    assert profile["requests"] == 30 and profile["state_bytes"] == 2048
    for op in ("save", "restore"):
        measured = profile[op]
        categories = measured["categories"]
        rest = categories.pop("server framework (the rest)")
        assert set(categories) == {"auth", "validation", "SQL", "hashing", "rendering"}
        assert all(c["us"] >= 0 and 0 <= c["pct"] <= 100 for c in [*categories.values(), rest])
        # Exclusive buckets: together no more than the request, the rest the difference (figures are
        # rounded to 0.1 µs).
        named = sum(category["us"] for category in categories.values())
        assert named <= measured["profiled_us"] + 1
        assert named + rest["us"] == pytest.approx(measured["profiled_us"], abs=1)
        assert categories["auth"]["us"] > 0 and categories["SQL"]["us"] > 0
        assert measured["wall_us"] > 0 and len(measured["top"]) == 10
        assert measured["cold_wall_us"] > 0
        assert all(top["us"] >= 0 and top["calls"] >= 0 for top in measured["top"])

    graphs = results["langgraph"]
    assert graphs["steps"] == 10 and graphs["cairn"]["runs"] == graphs["postgres"]["runs"] == 2
    assert graphs["cairn"]["per_step_ms"] > 0 and graphs["postgres"]["per_step_ms"] > 0

    assert [storage["turns"] for storage in results["storage"]] == [10, 30]
    for storage in results["storage"]:  # its figures are checked in test_storage_bench.py
        assert storage["cairn"]["checkpoints"] == storage["postgres"]["checkpoints"] > 10
        assert storage["cairn"]["relation_bytes"] > storage["cairn"]["floor_bytes"] > 0

    scale = results["scale"]["results"]
    assert set(scale) == {"1000", "3000"}
    for size in scale.values():
        assert size["message search (workspace, rare word)"]["results"] == 20
        assert size["medallion scope (20 matches)"]["results"] == 20
        assert all(timing["p50_ms"] > 0 for timing in size.values())

    sweep = results["sweep"]
    assert sweep["rows"] == 2000 and sweep["during"]["into swept threads"]["n"] > 0

    # The benchmark cleans up after itself: its database is gone.
    with psycopg.connect(with_database(server_url, "postgres")) as conn:
        row = conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s", (bench_db,)).fetchone()
    assert row == (0,)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_it_measures_a_part_on_and_off_in_turns(tmp_path: Path) -> None:
    stdout, _ = bench(tmp_path, "--ab", "thread_memo")
    assert "Each part on and off in turns, 2 round(s) each" in stdout, stdout
    results = json.loads((tmp_path / "latest.json").read_text())
    assert set(results) >= {"ab", "servers"} and not {"saves", "layers", "langgraph"} & set(results)
    measured = results["ab"]["parts"]["thread_memo"]
    assert measured["plain_path"].startswith("a save or append reads its thread first")
    # ABAB: the part on, then off, in each round.
    assert [(turn["round"], turn["variant"]) for turn in measured["turns"]] == [
        (1, "on"), (1, "off"), (2, "on"), (2, "off"),
    ]  # fmt: skip
    for turn in measured["turns"]:
        assert [(row["size"], row["clients"], row["op"]) for row in turn["rows"]] == [
            ("2 KB", 1, "save"), ("2 KB", 1, "restore"), ("2 KB", 1, "state"),
            ("2 KB", 16, "save"), ("2 KB", 16, "restore"),
            ("100 KB", 1, "save"), ("100 KB", 1, "restore"),
        ]  # fmt: skip
        assert all(row["api"]["n"] > 0 and row["api"]["p50_ms"] > 0 for row in turn["rows"])
        assert all(row["floor_ratio_p50"] > 0 for row in turn["rows"] if row["op"] != "state")
        assert turn["langgraph_per_step_ms"] > 0
    summary = measured["summary"]
    assert [line["op"] for line in summary][-1] == "langgraph step"
    for line in summary:
        assert len(line["on"]) == len(line["off"]) == len(line["saved_pct_by_round"]) == 2
        expected = (
            "ops_per_s" if line["clients"] == 16 else "per_step_ms" if line["size"] == "-" else "p50_ms"
        )
        assert line["metric"] == expected
        assert line["on_median"] > 0 and line["off_median"] > 0 and isinstance(line["saved_pct"], float)
