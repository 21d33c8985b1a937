"""The benchmark's layers section without a server: its two routes answer as each layer should, its settings
are production's with only the URL configuration changed, the workers' CPU is read from /proc, and the
table reads the JSON. (The quick benchmark run in test_bench_command serves and measures it end to end.)"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess  # nosec B404 # a child that burns CPU, fixed argv
import sys
import time
from typing import Any

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from checkpoints.bench import layers
from checkpoints.bench.report import layers_lines
from tests.conftest import ApiClient


@pytest.fixture
def layers_urls(settings: SettingsWrapper) -> None:
    settings.ROOT_URLCONF = "checkpoints.bench.layers_urls"


@pytest.mark.usefixtures("layers_urls")
def test_the_django_layer_answers_without_a_key_and_the_drf_layer_needs_one(api: ApiClient) -> None:
    anonymous = ApiClient()
    django_only = anonymous.get("/api/v1/bench/django/")
    assert (django_only.status_code, django_only.content) == (200, b"{}")

    refused = anonymous.get("/api/v1/bench/drf/")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "not_authenticated"

    answered = api.get("/api/v1/bench/drf/")
    assert (answered.status_code, answered.json()) == (200, {})
    # Cairn's own routes are still there, behind the two.
    assert api.get("/api/v1/threads/").json()["results"] == []


def test_the_layers_settings_are_production_s_with_only_the_urlconf_changed() -> None:
    production = importlib.import_module("project.settings")
    bench = importlib.import_module(layers.LAYERS_SETTINGS)
    names = {name for name in dir(production) if name.isupper()}
    assert names == {name for name in dir(bench) if name.isupper()}
    changed = {name for name in names if getattr(production, name) != getattr(bench, name)}
    assert changed == {"ROOT_URLCONF"}
    assert bench.ROOT_URLCONF == "checkpoints.bench.layers_urls"


BURN = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\ntime.sleep(30)"


def test_the_workers_cpu_is_the_children_s_user_and_system_time() -> None:
    # A parent of its own (this test process may have other children), whose one child burns 0.4 s of CPU.
    parent = subprocess.Popen(  # nosec B603 # sys.executable, fixed argv
        [sys.executable, "-c", f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BURN!r}])"],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        cpu = layers.workers_cpu_seconds(parent.pid)
        while (cpu is None or cpu < 0.4) and time.monotonic() < deadline:
            time.sleep(0.1)
            cpu = layers.workers_cpu_seconds(parent.pid)
        assert cpu is not None and 0.4 <= cpu < 2
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


def test_a_process_s_own_cpu_is_not_its_workers() -> None:
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])  # nosec B603 # fixed argv
    try:
        time.sleep(0.5)  # its start-up has used CPU time by now: counting the parent itself would show it
        assert layers.workers_cpu_seconds(idle.pid) == 0
    finally:
        idle.kill()
        idle.wait()


def test_the_layers_table_reads_the_json() -> None:
    row: dict[str, Any] = {
        "n": 4,
        "p50_ms": 1.5,
        "p50_vs_floor": 1.5,
        "server_cpu_us": 800,
        "cpu_vs_floor": 2.0,
    }
    results = {
        "requests": 4,
        "state_bytes": 2048,
        "layers": [
            {**row, "layer": layers.FLOOR_RESTORE, "p50_vs_floor": 1.0, "cpu_vs_floor": 1.0},
            {**row, "layer": "+ DRF: key, scope, throttle"},
            {**row, "layer": "no /proc", "server_cpu_us": None, "cpu_vs_floor": None},
        ],
    }
    lines = layers_lines(results)
    assert lines[0].startswith("Each layer of a served request (2 KB state, 4 requests per layer")
    assert lines[3].split() == ["the", "floor:", "restore", "1.50", "1.00x", "800", "1.00x"]
    assert lines[4].split()[-4:] == ["1.50", "1.50x", "800", "2.00x"]
    assert lines[5].split()[-2:] == ["-", "-"]
