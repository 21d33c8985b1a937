"""The benchmark's printed tables (plain text, as docs/performance.md shows them) and its JSON file."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SAVERS = (("postgres", "AsyncPostgresSaver"), ("cairn", "AsyncCairnSaver"))


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return "  ".join(
            v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))
        )

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def saves_lines(rows: list[dict[str, Any]]) -> list[str]:
    headers = [
        "size",
        "clients",
        "op",
        "API p50",
        "API p99",
        "API ops/s",
        "raw p50",
        "raw p99",
        "raw ops/s",
        "p50 ratio",
        "ops/s ratio",
    ]
    body = [
        [
            r["size"],
            r["clients"],
            r["op"],
            _ms(r["api"]["p50_ms"]),
            _ms(r["api"]["p99_ms"]),
            r["api"]["ops_per_s"],
            _ms(r["raw"]["p50_ms"]),
            _ms(r["raw"]["p99_ms"]),
            r["raw"]["ops_per_s"],
            _ratio(r["ratio_p50"]),
            _ratio(r["ratio_throughput"]),
        ]
        for r in rows
    ]
    return [
        "Checkpoint save/restore: HTTP API vs raw psycopg + SHA-256 (ms; ratio = API / raw)",
        *_table(headers, body),
    ]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def floor_lines(rows: list[dict[str, Any]]) -> list[str]:
    headers = [
        "size",
        "clients",
        "op",
        "API p50",
        "floor p50",
        "p50 ratio",
        "API ops/s",
        "floor ops/s",
        "API % of floor",
        "floor/raw p50",
    ]
    body = [
        [
            r["size"],
            r["clients"],
            r["op"],
            _ms(r["api"]["p50_ms"]),
            _ms(r["floor"]["p50_ms"]),
            _ratio(r["floor_ratio_p50"]),
            r["api"]["ops_per_s"],
            r["floor"]["ops_per_s"],
            _pct(r["floor_throughput_pct"]) if r["clients"] > 1 else "-",
            _ratio(r["floor_over_raw_p50"]),
        ]
        for r in rows
    ]
    return [
        "The same against the floor, a WSGI app with no framework under the same gunicorn command "
        "(ms; ratio = API / floor)",
        *_table(headers, body),
    ]


def layers_lines(layers: dict[str, Any]) -> list[str]:
    headers = ["layer", "p50 ms", "p50 vs floor", "server CPU µs", "CPU vs floor"]
    body = [
        [
            row["layer"],
            _ms(row["p50_ms"]),
            _ratio(row["p50_vs_floor"]),
            "-" if row["server_cpu_us"] is None else row["server_cpu_us"],
            _ratio(row["cpu_vs_floor"]),
        ]
        for row in layers["layers"]
    ]
    return [
        f"Each layer of a served request ({layers['state_bytes'] // 1024} KB state, {layers['requests']} "
        "requests per layer, one client; server CPU: the gunicorn workers' user + system time per request; "
        "each row against the floor's restore or save)",
        *_table(headers, body),
    ]


def profile_lines(profile: dict[str, Any]) -> list[str]:
    ops = ("save", "restore")
    names = list(profile["save"]["categories"])
    headers = ["where the time goes", *(f"{op} {unit}" for op in ops for unit in ("µs", "%"))]
    body = [[name, *(v for op in ops for v in _share(profile[op]["categories"].get(name)))] for name in names]
    body += [
        ["total under cProfile", *(v for op in ops for v in (f"{profile[op]['profiled_us']:.0f}", "100%"))],
        ["total without profiler", *(v for op in ops for v in (f"{profile[op]['wall_us']:.0f}", ""))],
        [
            "... CPU caches emptied first",
            *(v for op in ops for v in (f"{profile[op]['cold_wall_us']:.0f}", "")),
        ],
    ]
    lines = [
        f"One request in-process under cProfile ({profile['state_bytes'] // 1024} KB state, "
        f"{profile['requests']} requests each; µs per request)",
        *_table(headers, body),
    ]
    for op in ops:
        top = profile[op]["top"]
        lines += [
            "",
            f"{op}: top {len(top)} functions by own time (µs and calls per request, under cProfile)",
        ]
        lines += _table(
            ["function", "µs", "calls"], [[t["function"], f"{t['us']:.1f}", t["calls"]] for t in top]
        )
    if profile["save"].get("stale"):
        lines += [
            "",
            f"stale entry points (no such function, counted 0): {', '.join(profile['save']['stale'])}",
        ]
    return lines


def _share(category: dict[str, float] | None) -> tuple[str, str]:
    return ("-", "-") if category is None else (f"{category['us']:.0f}", f"{category['pct']:.1f}%")


def graphs_lines(steps: dict[str, Any]) -> list[str]:
    headers = ["checkpointer", "graph p50 ms", "graph p99 ms", "per step ms"]
    body = [
        [
            name,
            _ms(steps[key]["graph_p50_ms"]),
            _ms(steps[key]["graph_p99_ms"]),
            _ms(steps[key]["per_step_ms"]),
        ]
        for key, name in (
            ("none", "none (LangGraph alone)"),
            ("postgres", "AsyncPostgresSaver"),
            ("cairn", "AsyncCairnSaver (HTTP)"),
        )
    ]
    return [
        f"LangGraph, {steps['steps']}-step graph ({steps['postgres']['runs']} runs each, interleaved)",
        *_table(headers, body),
        f"per step: Cairn / PostgresSaver = {_ratio(steps['ratio_per_step'])}; "
        f"the savers' own time (LangGraph alone subtracted) = {_ratio(steps['ratio_saver_only'])}",
        *_turns_lines(steps),
    ]


def _turns_lines(steps: dict[str, Any]) -> list[str]:
    if "turns" not in steps:  # a report of a run before the chat was measured
        return []
    turns = steps["turns"]
    body = [
        [name, turns[key]["n"], _ms(turns[key]["p50_ms"]), _ms(turns[key]["p99_ms"])]
        for key, name in (("postgres", "AsyncPostgresSaver"), ("cairn", "AsyncCairnSaver (HTTP)"))
    ]
    return [
        "A chat on one thread, turn by turn (each reads the latest checkpoint, then saves)",
        *_table(["checkpointer", "turns", "turn p50 ms", "turn p99 ms"], body),
        f"per turn: Cairn / PostgresSaver = {_ratio(steps['ratio_per_turn'])}",
    ]


def storage_lines(storage: dict[str, Any]) -> list[str]:
    """One conversation's bytes per turn with each saver, then where Cairn's bytes went (table, index)."""
    headers = ["saver", "checkpoints", "relations B/turn", "WAL B/turn", "WAL this db B/turn", "dead tuples"]
    headers += ["updates (HOT)", "floor B/turn"]
    body = []
    for key, name in SAVERS:
        run = storage[key]
        body.append(
            [
                name,
                run["checkpoints"],
                f"{run['relation_bytes_per_turn']:,}",
                f"{run['wal_bytes_per_turn']:,}",
                f"{run['wal_bytes_database_per_turn']:,}" if run["wal_bytes_database"] is not None else "-",
                f"{run['dead_tuples']:,}",
                f"{run['updates']:,} ({run['hot_updates']:,})",
                f"{run['floor_bytes_per_turn']:,}",
            ]
        )
    relations = [
        [name, f"{size:,}", f"{size // storage['turns']:,}"]
        for name, size in storage["cairn"]["relations"].items()
    ]
    return [
        f"Storage of a {storage['turns']}-turn conversation, each saver alone on a fresh database",
        *_table(headers, body),
        f"Cairn / PostgresSaver: relations {_ratio(storage['ratio_relation_bytes'])}, "
        f"WAL {_ratio(storage['ratio_wal_bytes'])}, "
        f"WAL of its database {_ratio(storage['ratio_wal_bytes_database'])}",
        f"({storage['note']})",
        "Cairn's bytes by relation (heap, TOAST, index):",
        *_table(["relation", "bytes", "B/turn"], relations),
    ]


def storage_growth_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Bytes per turn at each conversation length: flat for near-linear growth, rising for quadratic."""
    lines = ["Storage growth, relation bytes per turn:"]
    for key, name in SAVERS:
        per_turn = ", ".join(
            f"{run[key]['relation_bytes_per_turn']:,} at {run['turns']} turns" for run in runs
        )
        lines.append(f"  {name}: {per_turn}")
    return lines


def scale_lines(scale: dict[str, Any]) -> list[str]:
    first, last = str(scale["sizes"][0]), str(scale["sizes"][-1])
    headers = [
        "read path",
        f"{int(first):,} p50",
        f"{int(first):,} p99",
        f"{int(last):,} p50",
        f"{int(last):,} p99",
        "p50 growth",
    ]
    body = [
        [
            name,
            _ms(scale["results"][first][name]["p50_ms"]),
            _ms(scale["results"][first][name]["p99_ms"]),
            _ms(scale["results"][last][name]["p50_ms"]),
            _ms(scale["results"][last][name]["p99_ms"]),
            _ratio(scale["growth_p50"].get(name)),
        ]
        for name in scale["results"][first]
    ]
    return [
        f"Read paths at {int(first):,} and {int(last):,} rows per table "
        f"(ms, {scale['requests']} requests each)",
        *_table(headers, body),
    ]


def sweep_lines(sweep: dict[str, Any]) -> list[str]:
    headers = ["2 KB saves", "idle p50", "idle p99", "during sweep p50", "during sweep p99", "saves during"]
    body = [
        [
            name,
            _ms(sweep["idle"][name]["p50_ms"]),
            _ms(sweep["idle"][name]["p99_ms"]),
            _ms(sweep["during"][name]["p50_ms"]),
            _ms(sweep["during"][name]["p99_ms"]),
            sweep["during"][name]["n"],
        ]
        for name in sweep["idle"]
    ]
    return [
        f"Saves while a sweep tombstones {sweep['rows']:,} expired checkpoints "
        f"in {sweep['threads']:,} threads "
        f"({sweep['passes']} sweep run(s), {sweep['sweep_seconds']} s, {sweep['sweep_rows_per_s']:,} rows/s)",
        *_table(headers, body),
    ]


def ab_lines(ab: dict[str, Any]) -> list[str]:
    headers = [
        "part",
        "size",
        "clients",
        "op",
        "metric",
        "on, by round",
        "off, by round",
        "on",
        "off",
        "saved",
    ]
    body = [
        [
            part,
            line["size"],
            line["clients"],
            line["op"],
            line["metric"],
            " ".join(str(value) for value in line["on"]),
            " ".join(str(value) for value in line["off"]),
            line["on_median"],
            line["off_median"],
            _pct(line["saved_pct"]),
        ]
        for part, measured in ab["parts"].items()
        for line in measured["summary"]
    ]
    return [
        f"Each part on and off in turns, {ab['rounds']} round(s) each (medians; saved = share of the plain "
        "path's time per request)",
        *_table(headers, body),
    ]


def render(results: dict[str, Any]) -> str:
    """Every section present in `results`, as plain-text tables."""
    parts: list[list[str]] = [
        [
            f"Cairn benchmark, {results['started_at']} — {results['machine']['cpus']} CPUs, PostgreSQL "
            f"{results['machine']['postgres']}, gunicorn {results['config']['workers']} worker processes",
            f"command: {results['command']}",
            *(
                ["packages: " + ", ".join(f"{n} {v}" for n, v in results["machine"]["packages"].items())]
                if "packages" in results["machine"]
                else []
            ),
            *(
                f"{name}: {results['servers'][name]}"
                for name in ("cairn", "floor")
                if name in results.get("servers", {})
            ),
        ]
    ]
    if "saves" in results:
        parts.append(saves_lines(results["saves"]))
        if all("floor" in row for row in results["saves"]):
            parts.append(floor_lines(results["saves"]))
    if "ab" in results:
        parts.append(ab_lines(results["ab"]))
    if "layers" in results:
        parts.append(layers_lines(results["layers"]))
    if "profile" in results:
        parts.append(profile_lines(results["profile"]))
    if "langgraph" in results:
        parts.append(graphs_lines(results["langgraph"]))
    if "storage" in results:
        parts += [storage_lines(storage) for storage in results["storage"]]
        parts.append(storage_growth_lines(results["storage"]))
    if "scale" in results:
        parts.append(scale_lines(results["scale"]))
    if "sweep" in results:
        parts.append(sweep_lines(results["sweep"]))
    return "\n\n".join("\n".join(lines) for lines in parts) + "\n"


def write_json(results: dict[str, Any], directory: Path) -> Path:
    """`<directory>/bench-<timestamp>.json`, and the same as `latest.json`; returns the first path."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(results, indent=2, sort_keys=False) + "\n"
    path = directory / f"bench-{stamp}.json"
    path.write_text(text)
    (directory / "latest.json").write_text(text)
    return path
