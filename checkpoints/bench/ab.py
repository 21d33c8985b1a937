"""`manage.py bench --ab PART[,PART...]`: what each performance part saves, measured against the plain path
it replaces (checkpoints.parts), in one run (docs/architecture.md, "The rent of each part").

For each part, Cairn is served with the part on, then off (`CAIRN_DISABLED_PARTS`), in turns (ABAB...),
each turn by a fresh gunicorn of the Procfile's command on the same database, with the floor measured in the
same turn: a 2 KB save and restore by one client and by 16 (the 16-client throughput), a 100 KB save and
restore, `GET state/` (the head cache's request), and the step of a LangGraph graph with AsyncCairnSaver.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from typing import Any

from checkpoints.bench import graphs
from checkpoints.bench.payloads import human_size
from checkpoints.bench.saves import ApiClients, SaveCase, api_case, floor_case, request_payload, state_case
from checkpoints.bench.server import Gunicorn, Stack
from checkpoints.bench.stats import Sample
from checkpoints.parts import PARTS

KB = 1024
VARIANTS = ("on", "off")
# (payload size, concurrent clients, saves per client in a full run, in a --quick run)
AB_PLAN = ((2 * KB, 1, 300, 10), (2 * KB, 16, 20, 2), (100 * KB, 1, 60, 3))
# LangGraph: steps per graph, runs per turn (full, --quick)
GRAPH_PLAN = {False: (20, 3), True: (5, 1)}


def ab_cases(*, quick: bool) -> list[SaveCase]:
    return [SaveCase(size, clients, ops_quick if quick else ops) for size, clients, ops, ops_quick in AB_PLAN]


def _saved_pct(on: float, off: float, *, higher_is_better: bool = False) -> float | None:
    """The share of the plain path's time per request that the part removes (negative: it costs)."""
    if not on or not off:
        return None
    return round(100 * ((on - off) / on if higher_is_better else (off - on) / off), 1)


def _turn(
    stack: Stack, *, workers: int, api_key: str, floor_url: str, cases: list[SaveCase], quick: bool, tag: str
) -> dict[str, Any]:
    """One turn: a fresh Cairn (with `stack`'s settings) and the floor, every case, the graph's step."""
    rows = []
    with Gunicorn(stack, workers=workers) as web:
        api = ApiClients(web.url, api_key)
        warm = SaveCase(2 * KB, max(case.clients for case in cases), 3)
        api_case(api, warm, request_payload(2 * KB)[1], f"{tag}-warm")  # imports, connections, plans
        for case in cases:
            body = request_payload(case.size)[1]
            case_tag = f"{tag}-s{case.size}-c{case.clients}"
            api_samples = api_case(api, case, body, case_tag)
            floor_samples = floor_case(floor_url, case, body, case_tag)
            for op, cairn, floor in zip(("save", "restore"), api_samples, floor_samples, strict=True):
                rows.append(_row(case, op, cairn, floor))
            if case.clients == 1 and case.size == 2 * KB:
                rows.append(_row(case, "state", state_case(api, case, case_tag), None))
        steps, runs = GRAPH_PLAN[quick]
        graph = graphs.bench_cairn_steps(base_url=web.url, api_key=api_key, steps=steps, runs=runs)
    return {"rows": rows, "langgraph_per_step_ms": graph["per_step_ms"]}


def _row(case: SaveCase, op: str, cairn: Sample, floor: Sample | None) -> dict[str, Any]:
    row: dict[str, Any] = {"size": human_size(case.size), "clients": case.clients, "op": op}
    row["api"] = cairn.summary()
    if floor is not None:
        row["floor"] = floor.summary()
        row["floor_ratio_p50"] = round(cairn.p50_ms / floor.p50_ms, 2) if floor.p50_ms else None
    return row


def _metric(row: dict[str, Any]) -> tuple[str, bool]:
    """What a row is judged by: latency for one client, throughput for many."""
    return ("ops_per_s", True) if row["clients"] > 1 else ("p50_ms", False)


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)  # the mean of two rounds would print float noise


def _summary(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per measured row: the figure in every round with the part on and off, their medians, % saved."""
    by_variant = {v: [t for t in turns if t["variant"] == v] for v in VARIANTS}
    lines = []
    for index, first in enumerate(by_variant["on"][0]["rows"]):
        metric, higher = _metric(first)
        values = {v: [t["rows"][index]["api"][metric] for t in by_variant[v]] for v in VARIANTS}
        on, off = _median(values["on"]), _median(values["off"])
        lines.append(
            {
                "size": first["size"],
                "clients": first["clients"],
                "op": first["op"],
                "metric": metric,
                "on": values["on"],
                "off": values["off"],
                "saved_pct_by_round": [
                    _saved_pct(a, b, higher_is_better=higher)
                    for a, b in zip(values["on"], values["off"], strict=True)
                ],
                "on_median": on,
                "off_median": off,
                "saved_pct": _saved_pct(on, off, higher_is_better=higher),
            }
        )
    steps = {v: [t["langgraph_per_step_ms"] for t in by_variant[v]] for v in VARIANTS}
    on, off = _median(steps["on"]), _median(steps["off"])
    lines.append(
        {
            "size": "-",
            "clients": 1,
            "op": "langgraph step",
            "metric": "per_step_ms",
            "on": steps["on"],
            "off": steps["off"],
            "saved_pct_by_round": [_saved_pct(a, b) for a, b in zip(steps["on"], steps["off"], strict=True)],
            "on_median": on,
            "off_median": off,
            "saved_pct": _saved_pct(on, off),
        }
    )
    return lines


def bench_ab(
    *,
    stack: Stack,
    workers: int,
    api_key: str,
    floor_url: str,
    parts: tuple[str, ...],
    rounds: int,
    quick: bool,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Every part in `parts` on and off in turns, `rounds` times each; the turns and their summary."""
    cases = ab_cases(quick=quick)
    results: dict[str, Any] = {"rounds": rounds, "parts": {}}
    for part in parts:
        turns = []
        for number in range(1, rounds + 1):
            for variant in VARIANTS:
                log(f"  ab: {part} {variant}, round {number} of {rounds}")
                disabled = "" if variant == "on" else part
                served = dataclasses.replace(stack, extra={**stack.extra, "CAIRN_DISABLED_PARTS": disabled})
                measured = _turn(
                    served,
                    workers=workers,
                    api_key=api_key,
                    floor_url=floor_url,
                    cases=cases,
                    quick=quick,
                    tag=f"ab-{part}-{number}-{variant}",
                )
                turns.append({"round": number, "variant": variant, **measured})
        results["parts"][part] = {"plain_path": PARTS[part], "turns": turns, "summary": _summary(turns)}
    return results
