"""Where one save and one restore spend their time: Cairn's WSGI app in-process, under cProfile.

`bench_profile` starts `python -m checkpoints.bench.profiling` with the served Cairn's environment (same
database, Redis and settings). That child imports `project.wsgi` (the app gunicorn serves), warms up, then
times N saves (`POST threads/{t}/checkpoints/?include_state=false`, the saves section's 2 KB body) and N
restores (`GET threads/{t}/checkpoints/{id}/`) without a profiler, N of each again with the CPU caches
emptied before each request, then N of each under cProfile. Requests are WSGI environs built before the
clock; gunicorn's HTTP parsing and socket I/O are not in here (the floor rows of the saves section measure
those).

Cold caches. Back to back, a request finds its code and data in the CPU caches. Served, the worker waits
for the network between requests while the client, PostgreSQL and gunicorn's own loop run, and the request
then costs more: as much more as the code and data it touches (docs/performance.md). The cold phase writes
a buffer larger than the caches (`EVICT_BYTES`) before each request, untimed, and times the request alone.

Attribution. CATEGORIES names each category's entry points. A function's time counts to the category of
the outermost entry point it runs under (SQL run by auth is auth; the hashing inside a renderer would be
rendering), and whatever no entry point covers is the server framework (the rest: middleware, DRF
dispatch, throttling, the ORM's query building, the services' own code). cProfile keeps caller->callee
edges, not stacks, so "under" is computed from the edges: the share of a function's time that runs below
an entry point is the edge-time-weighted share of its callers that are entry points or are themselves
below one (gprof's rule, with measured edge times instead of call counts). Exact when a function is only
reached one way; an estimate where the ORM is shared by auth and the rest.
"""

from __future__ import annotations

import cProfile
import importlib
import inspect
import io
import json
import os
import pstats
import subprocess  # nosec B404 # runs this module in a child with fixed argv
import sys
import sysconfig
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from checkpoints.bench.saves import request_payload
from checkpoints.bench.server import PYTHON, REPO, Stack
from checkpoints.bench.stats import BenchError

# Entry points per category, easy to edit when the hot path moves: "module:Qual.name" (imported; a
# decorator's wrapper is looked through), a source path ("checkpoints/api/fields.py": every function in it;
# "dir/": every file under it) or a cProfile label of a C function ("<method 'update' of ...>"). An entry
# that never runs counts 0 (listed as `unmatched` in the results); one that names no function any more is
# also listed as `stale`, and printed.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "auth": ("checkpoints.api.auth:request_authentication",),
    "validation": (
        "checkpoints/api/parsers.py",
        "rest_framework.serializers:BaseSerializer.is_valid",
        "rest_framework.serializers:Serializer.run_validation",
        "checkpoints/api/fields.py",
        "checkpoints/api/compiled_validation.py",
    ),
    "SQL": (
        "django.db.backends.utils:CursorWrapper.execute",
        "django.db.backends.utils:CursorWrapper.executemany",
        "django.db.backends.utils:CursorWrapper._execute",
        "psycopg:Cursor.execute",
        "psycopg:Cursor.fetchone",
        "psycopg:Cursor.fetchmany",
        "psycopg:Cursor.fetchall",
        "psycopg:Connection.commit",
        "psycopg:Connection.rollback",
    ),
    "hashing": (
        "checkpoints/integrity.py",
        "hashlib:sha256",
        "<method 'update' of '_hashlib.HASH' objects>",
        "<method 'hexdigest' of '_hashlib.HASH' objects>",
    ),
    "rendering": (
        "checkpoints.api.renderers:CairnJSONRenderer.render",
        "checkpoints.api.serializers.checkpoints:checkpoint_representation",
    ),
}
REST = "server framework (the rest)"
TOP = 10
WARM_UP = 40
EVICT_BYTES = 64 * 1024 * 1024  # larger than the last-level cache of the machines this runs on
STATE_BYTES = 2048

Func = tuple[str, int, str]  # a pstats key: (file, first line, name); ("~", 0, label) for C functions


def _function_key(entry: str) -> Func | None:
    module, _, qualname = entry.partition(":")
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        target = inspect.unwrap(target)
    except Exception:  # an entry the code no longer has counts 0, it never stops the benchmark
        return None
    code = getattr(target, "__code__", None)
    if isinstance(code, types.CodeType):
        return (code.co_filename, code.co_firstlineno, code.co_name)
    if isinstance(target, types.BuiltinFunctionType):
        return ("~", 0, f"<built-in method {target.__module__}.{target.__name__}>")
    return None


def _matcher(entry: str) -> Callable[[Func], bool]:
    if entry.startswith("<"):
        return lambda func: func == ("~", 0, entry)
    if "/" in entry:
        needle = "/" + entry
        if entry.endswith("/"):
            return lambda func: needle in func[0]
        return lambda func: func[0].endswith(needle)
    key = _function_key(entry)
    return lambda func: func == key


def attribute(
    stats: dict[Func, Any], categories: dict[str, tuple[str, ...]] = CATEGORIES
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Seconds per entry point, by category (a function's time counts to the outermost entry point it runs
    under; a function matched by two entries counts to the first), and the entries that matched nothing."""
    entries: dict[Func, tuple[str, str]] = {}
    unmatched = []
    for category, specs in categories.items():
        for spec in specs:
            match = _matcher(spec)
            hits = [func for func in stats if match(func)]
            unmatched += [] if hits else [spec]
            for func in hits:
                entries.setdefault(func, (category, spec))
    below: dict[Func, float] = {}

    def share_below(func: Func) -> float:
        """The share of `func`'s time that runs below some entry point (0..1)."""
        if func not in below:
            below[func] = 0.0  # a cycle back to `func` counts as not below anything
            edges = {caller: edge[3] for caller, edge in stats[func][4].items() if caller != func}
            under = 0.0
            for caller, time_from_caller in edges.items():  # a plain loop: deep caller chains use no C stack
                under += time_from_caller * (1.0 if caller in entries else share_below(caller))
            below[func] = under / sum(edges.values()) if under else 0.0
        return below[func]

    seconds: dict[str, dict[str, float]] = {
        category: dict.fromkeys(specs, 0.0) for category, specs in categories.items()
    }
    for func, (category, spec) in entries.items():
        seconds[category][spec] += stats[func][3] * (1.0 - share_below(func))
    return seconds, unmatched


def stale_entries(categories: dict[str, tuple[str, ...]] = CATEGORIES) -> list[str]:
    """The `module:function` entries that name no function any more (renamed or moved: they count 0)."""
    return [
        spec
        for specs in categories.values()
        for spec in specs
        if ":" in spec and not spec.startswith("<") and _function_key(spec) is None
    ]


def _label(func: Func) -> str:
    path, _, name = func
    if path == "~":
        return name
    for root in (f"{REPO}/", "site-packages/", f"{sysconfig.get_paths()['stdlib']}/"):
        path = path.rpartition(root)[2]
    return f"{path}:{name}"


# ---- the child process -------------------------------------------------------------------------------


def environ(method: str, path: str, api_key: str, *, query: str = "", body: bytes = b"") -> dict[str, Any]:
    return {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {api_key}",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


def serve_one(app: Callable[..., Any], request: dict[str, Any]) -> tuple[str, dict[str, str], bytes]:
    """One request through the WSGI app, as gunicorn drives it (the body consumed, the response closed)."""
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answer.update(status=status, headers=dict(headers))
        return lambda _data: None

    result = app(request, start_response)
    try:
        body = b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()
    return answer["status"], answer["headers"], body


def _timed(
    app: Callable[..., Any], requests: list[dict[str, Any]], expect: str, *, profile: bool, cold: bool = False
) -> tuple[dict[str, Any], list[bytes]]:
    """Serve `requests` (each must answer `expect`): the profile's summary, or the wall time per request
    (with `cold`, the CPU caches emptied before each request, untimed)."""
    profiler = cProfile.Profile()
    answers = []
    evict = bytearray(EVICT_BYTES) if cold else None
    elapsed = 0.0
    if profile:
        profiler.enable()
    for request in requests:
        if evict is not None:
            evict[::64] = bytes(len(evict) // 64)  # one write per cache line
        started = time.perf_counter()
        answers.append(serve_one(app, request))
        elapsed += time.perf_counter() - started
    if profile:
        profiler.disable()
    for request, (status, headers, body) in zip(requests, answers, strict=True):
        verified = expect != "200" or headers.get("X-Checksum-Verified") == "true"
        if not status.startswith(expect) or not verified:
            raise BenchError(f"{request['REQUEST_METHOD']} {request['PATH_INFO']}: {status} {body[:300]!r}")
    n = len(requests)
    key = "cold_wall_us" if cold else "wall_us"
    summary = _summary(profiler, n) if profile else {key: round(elapsed / n * 1e6, 1)}
    return summary, [body for _, _, body in answers]


def _phase(
    app: Callable[..., Any], api_key: str, thread: str, n: int, *, profile: bool, cold: bool = False
) -> dict[str, Any]:
    """n saves into `thread`, then n restores of what they saved."""
    body = request_payload(STATE_BYTES)[1]
    prefix = f"/api/v1/threads/{thread}/checkpoints/"
    saves = [environ("POST", prefix, api_key, query="include_state=false", body=body) for _ in range(n)]
    save, answers = _timed(app, saves, "201", profile=profile, cold=cold)
    ids = [json.loads(answer)["checkpoint_id"] for answer in answers]
    restores = [environ("GET", f"{prefix}{checkpoint_id}/", api_key) for checkpoint_id in ids]
    restore, _ = _timed(app, restores, "200", profile=profile, cold=cold)
    return {"save": save, "restore": restore}


def _measure(app: Callable[..., Any], api_key: str, n: int) -> dict[str, Any]:
    _phase(app, api_key, "profile-warm-up", WARM_UP, profile=False)
    wall = _phase(app, api_key, "profile-wall", n, profile=False)
    cold = _phase(app, api_key, "profile-cold", n, profile=False, cold=True)
    profiled = _phase(app, api_key, "profile", n, profile=True)
    return {op: {**wall[op], **cold[op], **profiled[op]} for op in ("save", "restore")}


def _summary(profiler: cProfile.Profile, n: int) -> dict[str, Any]:
    stats: dict[Func, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    code = serve_one.__code__
    total = stats[(code.co_filename, code.co_firstlineno, code.co_name)][3]
    by_entry, unmatched = attribute(stats)
    seconds = {category: sum(entries.values()) for category, entries in by_entry.items()}
    seconds[REST] = max(0.0, total - sum(seconds.values()))
    top = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:TOP]

    def us(value: float) -> float:
        return round(value / n * 1e6, 1)

    return {
        "profiled_us": us(total),
        "categories": {
            category: {
                "us": us(value),
                "pct": round(100 * value / total, 1) if total else 0.0,
                "entries": {spec: us(time) for spec, time in by_entry.get(category, {}).items()},
            }
            for category, value in seconds.items()
        },
        "top": [
            {"function": _label(func), "us": us(row[2]), "calls": round(row[1] / n, 2)} for func, row in top
        ],
        "unmatched": unmatched,  # entries this request never ran (stale ones included)
        "stale": stale_entries(),
    }


def main(argv: list[str]) -> None:
    requests, output = int(argv[0]), Path(argv[1])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # share_below walks caller chains
    from project.wsgi import application

    results = _measure(application, os.environ["BENCH_PROFILE_API_KEY"], requests)
    output.write_text(json.dumps({"requests": requests, "state_bytes": STATE_BYTES, **results}, indent=2))


# ---- the parent (manage.py bench) --------------------------------------------------------------------


def bench_profile(*, stack: Stack, api_key: str, requests: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Run the child with the bench stack's environment; its results."""
    log(f"  profile: {requests} saves and {requests} restores in-process: warm, cold caches, under cProfile")
    output = stack.root / "profile.json"
    result = subprocess.run(  # nosec B603 # argv built here from sys.executable, no shell
        [PYTHON, "-m", "checkpoints.bench.profiling", str(requests), str(output)],
        cwd=REPO,
        env=stack.env(BENCH_PROFILE_API_KEY=api_key),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if result.returncode != 0:
        raise BenchError(f"the profile child failed:\n{result.stdout}\n{result.stderr}")
    return dict(json.loads(output.read_text()))


if __name__ == "__main__":
    main(sys.argv[1:])
