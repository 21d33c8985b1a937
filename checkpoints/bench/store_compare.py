"""put/get/search of `CairnStore` (over HTTP, gunicorn) against LangGraph's `InMemoryStore` and
`PostgresStore` (without vectors) on the same PostgreSQL (docs/store.md, "Benchmark"):

    DATABASE_URL=postgres://... REDIS_URL=redis://... python -m checkpoints.bench.store_compare --items 500

Creates a scratch database next to DATABASE_URL's (dropped at the end), serves Cairn from it with two
gunicorn workers, and runs the same operations on each store, one at a time: `--items` puts, as many gets,
`--searches` filtered searches (limit 10) under a namespace prefix. Server-side embedding is off for the
Cairn server, as PostgresStore runs without vectors here. Prints p50/p95 milliseconds per operation."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def _timed(calls: Sequence[Callable[..., object]]) -> str:
    spent = []
    for call in calls:
        started = time.perf_counter()
        call()
        spent.append((time.perf_counter() - started) * 1000)
    ordered = sorted(spent)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(spent):6.2f} / {p95:6.2f}"


def _run(name: str, store: Any, items: int, searches: int) -> None:
    namespaces = [("users", f"u{index % 20}", "memories") for index in range(items)]
    puts = [
        (lambda i=i: store.put(namespaces[i], f"k{i}", {"n": i, "kind": "fact" if i % 2 else "note"}))
        for i in range(items)
    ]
    gets = [(lambda i=i: store.get(namespaces[i], f"k{i}")) for i in range(items)]
    finds = [
        (
            lambda i=i: store.search(
                ("users", f"u{i % 20}"), filter={"kind": "fact", "n": {"$gte": i}}, limit=10
            )
        )
        for i in range(searches)
    ]
    print(f"{name:<14} put {_timed(puts)}   get {_timed(gets)}   search {_timed(finds)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--searches", type=int, default=200)
    args = parser.parse_args()
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.postgres import PostgresStore

    from checkpoints.bench.server import Gunicorn, Stack, bench_database, database_name
    from checkpoints.sdk.langgraph import CairnStore

    server_url = os.environ["DATABASE_URL"]
    name = f"{database_name(server_url) or 'cairn'}_store_{uuid.uuid4().hex[:8]}"
    print("p50 / p95 ms per operation")
    _run("InMemoryStore", InMemoryStore(), args.items, args.searches)
    with bench_database(server_url, name) as database_url, tempfile.TemporaryDirectory() as root:
        with PostgresStore.from_conn_string(database_url) as postgres:
            postgres.setup()
            _run("PostgresStore", postgres, args.items, args.searches)
        stack = Stack.create(
            database_url, os.environ.get("REDIS_URL", ""), Path(root), CAIRN_EMBEDDINGS_PROVIDER="none"
        )
        stack.manage("migrate", "--no-input")
        key = stack.api_key("store-bench")
        try:
            with Gunicorn(stack, workers=2) as web, CairnStore(web.url, key) as cairn:
                _run("CairnStore", cairn, args.items, args.searches)
        finally:
            if stack.redis_url:
                stack.forget_cache()


if __name__ == "__main__":
    main()
