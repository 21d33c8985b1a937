"""Search by meaning among many store items of one workspace (docs/store.md, "Search by meaning"):

    DATABASE_URL=postgres://... python -m checkpoints.bench.store_search --items 100000

Fills a scratch workspace with `--items` items (256-dimension vectors, the default model's size, in 100
namespaces), then times `store_search` with a text query (the query embedded by the configured embedder,
the ranking through the in-process snapshot): the first search (the snapshot is built), then `--runs`
warm searches over the whole workspace and over one namespace prefix, and a search right after a write
(the snapshot catches up). Prints milliseconds; deletes the workspace at the end."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from datetime import timedelta


def _timed(run: Callable[[], object], times: int) -> list[float]:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        spent.append((time.perf_counter() - started) * 1000)
    return spent


def _summary(name: str, spent: list[float]) -> str:
    ordered = sorted(spent)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{name}: p50 {statistics.median(spent):.1f} ms, p95 {p95:.1f} ms ({len(spent)} runs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    import numpy as np
    from django.db import transaction
    from django.utils import timezone

    from checkpoints.models import StoreItem, Workspace
    from checkpoints.services.audit import Actor
    from checkpoints.services.store import store_put, store_search
    from checkpoints.services.store_index import vectors_changed
    from checkpoints.services.store_vectors import pack

    workspace = Workspace.objects.create(slug=f"bench-store-{os.getpid()}", name="store search benchmark")
    try:
        rng = np.random.default_rng(7)
        # Written a day ago: the workspace's memory, not a burst of writes still being caught up with.
        written = timezone.now() - timedelta(days=1)
        started = time.perf_counter()
        for first in range(0, args.items, 5000):
            batch = []
            for index in range(first, min(first + 5000, args.items)):
                vector = rng.standard_normal(256).astype(np.float32)
                batch.append(
                    StoreItem(
                        workspace=workspace,
                        namespace=f"users.u{index % 100}.memories",
                        key=f"item-{index}",
                        value={"text": f"memory number {index}"},
                        vectors=pack([vector.tolist()]),
                        created_at=written,
                        updated_at=written,
                    )
                )
            with transaction.atomic():
                StoreItem.objects.bulk_create(batch)
                vectors_changed(workspace.pk)
        print(f"filled {args.items} items in {time.perf_counter() - started:.1f} s")

        def whole() -> object:
            return store_search(workspace=workspace, query="what does the user like to eat", limit=10)

        def prefix() -> object:
            return store_search(
                workspace=workspace, namespace_prefix=["users", "u7"], query="favourite food", limit=10
            )

        print(_summary("first search (builds the snapshot)", _timed(whole, 1)))
        print(_summary(f"search among {args.items} items", _timed(whole, args.runs)))
        print(_summary(f"search under one prefix ({args.items // 100} items)", _timed(prefix, args.runs)))

        def after_write() -> object:
            store_put(
                workspace=workspace, actor=Actor.system(), namespace=["users", "u1"], key="new",
                value={"text": "likes spicy noodles"},
            )  # fmt: skip
            return whole()

        print(_summary("a write, then a search (catches up)", _timed(after_write, 10)))
    finally:
        StoreItem.objects.filter(workspace=workspace).delete()
        workspace.delete()


if __name__ == "__main__":
    main()
