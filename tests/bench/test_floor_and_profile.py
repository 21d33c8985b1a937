"""The benchmark's floor and profile pieces without a server: the floor's command is the Procfile's with only
the app swapped, the floor answers like a service, and the profile's attribution counts nested entry points
once (the outermost wins) and survives entries that no longer exist."""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
from pathlib import Path
from typing import Any

import pytest

from checkpoints.bench import floor, profiling, server
from checkpoints.bench.stats import BenchError


def test_cairn_and_the_floor_run_the_procfile_web_command_with_only_the_app_swapped() -> None:
    cairn = server.procfile_web_argv("project.wsgi", port=4321, workers=3)
    lowest = server.procfile_web_argv("checkpoints.bench.floor", port=4321, workers=3)
    assert cairn[:3] == [sys.executable, "-m", "gunicorn"]
    assert [i for i, (a, b) in enumerate(zip(cairn, lowest, strict=True)) if a != b] == [3]
    assert lowest[3] == "checkpoints.bench.floor"
    assert cairn[cairn.index("--bind") + 1] == "127.0.0.1:4321"
    assert cairn[cairn.index("--workers") + 1] == "3"
    web = next(line for line in server.PROCFILE.read_text().splitlines() if line.startswith("web:"))
    for flag in (token for token in web.split() if token.startswith("--")):
        assert flag in cairn  # every Procfile flag, as written


def test_a_candidate_web_line_replaces_the_procfiles_with_only_the_app_swapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    line = "waitress --listen=127.0.0.1:${PORT} --threads=${WEB_CONCURRENCY} project.wsgi:application"
    monkeypatch.setenv(server.CANDIDATE_WEB_LINE, line)
    assert server.procfile_web_argv("checkpoints.bench.floor", port=4321, workers=3) == [
        sys.executable, "-m", "waitress", "--listen=127.0.0.1:4321", "--threads=3",
        "checkpoints.bench.floor:application",
    ]  # fmt: skip
    monkeypatch.setenv(server.CANDIDATE_WEB_LINE, "uvicorn project.asgi:application --port ${PORT}")
    assert server.procfile_web_argv("project.wsgi", port=4321, workers=3)[3:5] == [
        "project.asgi:application",
        "--port",
    ]
    with pytest.raises(BenchError, match=r"cannot serve checkpoints\.bench\.floor"):
        server.procfile_web_argv("checkpoints.bench.floor", port=1, workers=1)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("web: gunicorn project.wsgi --bind 0.0.0.0:$PORT --workers ${WORKERS:-2}", r"uses \$WORKERS"),
        ("web: uvicorn project.asgi --bind 0.0.0.0:$PORT", "is not `gunicorn project.wsgi"),
        ("worker: celery -A project worker", "exactly one `web:` line"),
    ],
)
def test_a_procfile_the_benchmark_cannot_reproduce_stops_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, line: str, message: str
) -> None:
    (tmp_path / "Procfile").write_text(f"{line}\n")
    monkeypatch.setattr(server, "PROCFILE", tmp_path / "Procfile")
    with pytest.raises(BenchError, match=message):
        server.procfile_web_argv("project.wsgi", port=1, workers=1)


def _call_floor(method: str, path: str, body: bytes = b"") -> tuple[str, bytes]:
    answer: list[str] = []
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    chunks = floor.application(environ, lambda status, headers: answer.append(status))
    return answer[0], b"".join(chunks)


def test_the_floor_routes_and_refuses_without_touching_the_database() -> None:
    assert _call_floor("GET", "/healthz")[0] == "200 OK"
    assert _call_floor("GET", "/nope")[0] == "404 Not Found"
    assert _call_floor("GET", "/restore/abc")[0] == "404 Not Found"
    assert _call_floor("POST", "/save/t1", b"not json")[0] == "400 Bad Request"
    assert _call_floor("POST", "/save/t1", b'{"state": NaN}')[0] == "400 Bad Request"
    assert _call_floor("POST", "/save/t1", b'{"agent_id": "a"}')[0] == "400 Bad Request"


def test_nested_entry_points_count_once_to_the_outermost() -> None:
    """view -> auth -> sql and view -> sql: auth's SQL is auth's; only the view's own SQL is SQL."""
    view, auth, sql = ("~", 0, "<view>"), ("~", 0, "<auth>"), ("~", 0, "<sql>")
    stats: dict[Any, Any] = {
        view: (1, 1, 1.0, 10.0, {}),
        auth: (1, 1, 1.0, 4.0, {view: (1, 1, 1.0, 4.0)}),
        sql: (2, 2, 5.0, 5.0, {auth: (1, 1, 3.0, 3.0), view: (1, 1, 2.0, 2.0)}),
    }
    seconds, unmatched = profiling.attribute(
        stats, {"auth": ("<auth>",), "SQL": ("<sql>", "<missing>"), "hashing": ("no.such.module:f",)}
    )
    assert seconds == {
        "auth": {"<auth>": 4.0},
        "SQL": {"<sql>": 2.0, "<missing>": 0.0},
        "hashing": {"no.such.module:f": 0.0},
    }
    assert unmatched == ["<missing>", "no.such.module:f"]


def _query() -> int:
    return sum(range(20_000))


def _authenticate() -> int:
    return _query() + sum(range(5_000))


def _request() -> int:
    return _authenticate() + _query() + _query()


def test_attribution_reads_a_real_profile_by_function_path_and_label() -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        _request()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    here = "tests.bench.test_floor_and_profile"
    seconds, unmatched = profiling.attribute(
        stats,
        {
            "auth": (f"{here}:_authenticate",),
            "SQL": (f"{here}:_query", "<built-in method builtins.sum>", f"{here}:_gone"),
        },
    )
    by_name = {key[2]: value for key, value in stats.items()}
    assert seconds["auth"][f"{here}:_authenticate"] == pytest.approx(by_name["_authenticate"][3])
    # The request's own two queries: everything _query did, minus its share under _authenticate.
    own = next(edge[3] for caller, edge in by_name["_query"][4].items() if caller[2] == "_request")
    assert seconds["SQL"][f"{here}:_query"] == pytest.approx(own)
    assert seconds["SQL"]["<built-in method builtins.sum>"] == pytest.approx(0.0, abs=1e-9)  # all nested
    assert unmatched == [f"{here}:_gone"]
    # A source path takes every function in the file: here `_request`, the outermost, takes it all.
    whole, _ = profiling.attribute(stats, {"file": ("tests/bench/test_floor_and_profile.py",)})
    assert sum(whole["file"].values()) == pytest.approx(by_name["_request"][3])


def test_the_default_categories_resolve_on_this_code() -> None:
    """Every `module:function` entry still names a function (a renamed one would count 0): if this fails,
    update profiling.CATEGORIES to the hot path's new names."""
    assert profiling.stale_entries() == []
    assert profiling.stale_entries({"x": ("checkpoints.api.auth:Gone.authenticate", "<sql>", "a/b.py")}) == [
        "checkpoints.api.auth:Gone.authenticate"
    ]


def test_the_profile_table_reads_the_json() -> None:
    from checkpoints.bench.report import profile_lines

    op = {
        "wall_us": 900.0,
        "cold_wall_us": 1700.0,
        "profiled_us": 1500.0,
        "categories": {"auth": {"us": 500.0, "pct": 33.3}, profiling.REST: {"us": 1000.0, "pct": 66.7}},
        "top": [{"function": "x.py:f", "us": 12.5, "calls": 2.0}],
        "unmatched": ["<never-ran>"],
        "stale": ["<gone>"],
    }
    text = "\n".join(profile_lines({"requests": 3, "state_bytes": 2048, "save": op, "restore": op}))
    assert "auth" in text and "1500" in text and "x.py:f" in text and "<gone>" in text
    assert "CPU caches emptied first" in text and "1700" in text
    json.dumps(op)  # what the child writes is plain JSON
