"""Each layer of a served request: what Django, DRF and Cairn's work add to the floor, under the real server.

The in-process profile (checkpoints.bench.profiling) runs requests back to back in one process. Served, a
request arrives after the worker has waited on the network, and the same code then costs more: its share
of a served request is larger than the profile says (docs/performance.md). This section serves Cairn
with the Procfile's own command and settings, plus two routes of its own (`LAYERS_SETTINGS`: the same
settings, with checkpoints.bench.layers_urls as the URL configuration), and times one keep-alive client
against each layer in turn, in rounds:

- the floor's restore and save (`checkpoints.bench.floor`): gunicorn and the essential work, no framework;
- `GET /api/v1/bench/django/`: gunicorn, Django and Cairn's middleware (a view answering `{}` at once);
- `GET /api/v1/bench/drf/`: the same through DRF as every API view runs it (the key's authentication with
  its Redis round trip, the scope check, the throttle), answering `{}`;
- Cairn's restore and save of a 2 KB state, as in the saves section.

Per layer: the p50 latency, and the server's CPU time per request (user + system time of the gunicorn
workers, read from /proc before and after). The CPU time is what bounds throughput on a machine with few
cores.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from checkpoints.bench.saves import request_payload
from checkpoints.bench.server import Gunicorn, Stack
from checkpoints.bench.stats import BenchError, percentile

LAYERS_SETTINGS = "checkpoints.bench.layers_settings"
ROUNDS = 4
WARM_UP = 20
STATE_BYTES = 2048
FLOOR_RESTORE, FLOOR_SAVE = "the floor: restore", "the floor: save"


def workers_cpu_seconds(parent_pid: int) -> float | None:
    """User + system CPU seconds of the live children of `parent_pid` (gunicorn's workers); None without
    /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    ticks = 0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # After the command name (which may hold spaces): state, ppid, ... utime and stime are the 12th
            # and 13th fields from there (proc(5)).
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # the process ended while we looked
            continue
        if int(fields[1]) == parent_pid:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class Layer:
    name: str
    client: httpx.Client
    server_pid: int
    request: Callable[[httpx.Client], httpx.Response]
    baseline: str  # the floor's layer this one is compared with: FLOOR_RESTORE or FLOOR_SAVE
    latencies: list[float] = field(default_factory=list)
    cpu_seconds: float | None = 0.0  # None where /proc cannot say

    def run(self, n: int) -> None:
        before = workers_cpu_seconds(self.server_pid)
        for _ in range(n):
            started = time.perf_counter()
            response = self.request(self.client)
            self.latencies.append(time.perf_counter() - started)
            if response.status_code >= 300:
                raise BenchError(f"{self.name}: {response.status_code} {response.text[:300]}")
        after = workers_cpu_seconds(self.server_pid)
        if before is None or after is None or self.cpu_seconds is None:
            self.cpu_seconds = None
        else:
            self.cpu_seconds += max(0.0, after - before)


def _layers(cairn: Gunicorn, floor: Gunicorn, api_key: str) -> list[Layer]:
    body = request_payload(STATE_BYTES)[1]
    cairn_pid, floor_pid = _pid(cairn), _pid(floor)
    api = httpx.Client(
        base_url=f"{cairn.url}/api/v1/",
        headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
        timeout=60,
    )
    plain = httpx.Client(base_url=floor.url, headers={"Content-Type": "application/json"}, timeout=60)
    save_path = "threads/bench-layers/checkpoints/?include_state=false"
    saved = api.post(save_path, content=body)
    stored = plain.post("/save/bench-layers", content=body)
    if saved.status_code != 201 or stored.status_code != 201:
        raise BenchError(f"layers setup: {saved.status_code} {saved.text[:200]} / {stored.text[:200]}")
    restore_path = f"threads/bench-layers/checkpoints/{saved.json()['checkpoint_id']}/"
    floor_restore = f"/restore/{stored.json()['id']}"
    return [
        Layer(FLOOR_RESTORE, plain, floor_pid, lambda c: c.get(floor_restore), FLOOR_RESTORE),
        Layer("Django + Cairn's middleware", api, cairn_pid, lambda c: c.get("bench/django/"), FLOOR_RESTORE),
        Layer("+ DRF: key, scope, throttle", api, cairn_pid, lambda c: c.get("bench/drf/"), FLOOR_RESTORE),
        Layer("Cairn: restore", api, cairn_pid, lambda c: c.get(restore_path), FLOOR_RESTORE),
        Layer(FLOOR_SAVE, plain, floor_pid, lambda c: c.post("/save/bench-layers", content=body), FLOOR_SAVE),
        Layer("Cairn: save", api, cairn_pid, lambda c: c.post(save_path, content=body), FLOOR_SAVE),
    ]


def _pid(server: Gunicorn) -> int:
    if server.process is None:
        raise BenchError("the server is not running")
    return server.process.pid


def bench_layers(
    *, stack: Stack, floor: Gunicorn, workers: int, api_key: str, requests: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """`requests` requests per layer (one client, in ROUNDS turns); p50 and server CPU per request."""
    log(f"  layers: {requests} requests per layer, one client")
    with Gunicorn(stack, workers=workers, settings=LAYERS_SETTINGS) as cairn:
        layers = _layers(cairn, floor, api_key)
        try:
            for item in layers:
                item.run(WARM_UP)
                item.latencies.clear()
                item.cpu_seconds = 0.0
            share, rest = divmod(requests, ROUNDS)
            for round_number in range(ROUNDS):
                for item in layers:
                    item.run(share + (1 if round_number < rest else 0))
        finally:
            for client in {id(item.client): item.client for item in layers}.values():
                client.close()
    return {"requests": requests, "state_bytes": STATE_BYTES, "layers": _summaries(layers)}


def _summaries(layers: list[Layer]) -> list[dict[str, Any]]:
    by_name = {item.name: item for item in layers}
    rows = []
    for item in layers:
        base = by_name[item.baseline]
        p50 = percentile(item.latencies, 0.50) * 1000
        base_p50 = percentile(base.latencies, 0.50) * 1000
        cpu_us = None if item.cpu_seconds is None else item.cpu_seconds / len(item.latencies) * 1e6
        base_cpu_us = None if base.cpu_seconds is None else base.cpu_seconds / len(base.latencies) * 1e6
        rows.append(
            {
                "layer": item.name,
                "n": len(item.latencies),
                "p50_ms": round(p50, 3),
                "p50_vs_floor": round(p50 / base_p50, 2) if base_p50 else None,
                "server_cpu_us": None if cpu_us is None else round(cpu_us),
                "cpu_vs_floor": round(cpu_us / base_cpu_us, 2)
                if cpu_us is not None and base_cpu_us
                else None,
            }
        )
    return rows
