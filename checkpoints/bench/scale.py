"""The read paths at growing table sizes: bulk-load with COPY up to each size, then time the real endpoints.

Layout at N rows (checkpoints, messages and medallions each hold N rows of the benchmark's workspace):
- cold threads of 10 checkpoints and 10 messages each (N/10 threads): head lookups and restores pick one
  at random per request, so the head cache misses (it is also emptied before each size is measured);
- one hot thread with a long history (`hot_rows` checkpoints and messages): timeline pages, message pages
  and the per-thread message search;
- messages are sentences over a 58-word vocabulary (a common word such as "invoice" is in ~18% of them)
  plus one rare word in exactly 20 messages, whatever N;
- medallions with 3 of 1,000 graph nodes and 2 of 50 tags, plus 20 old ones of a fixed scope: a selective
  scope query has the same 20 answers at every size, however deep in the table they lie.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg

from checkpoints.bench.loader import chain, copy_model, thread_pks, thread_rows
from checkpoints.bench.payloads import agent_state, sentence
from checkpoints.bench.saves import ApiClients, _expect
from checkpoints.bench.stats import Sample
from checkpoints.integrity import canonical_json
from checkpoints.models import Checkpoint, Medallion, Message, Thread
from checkpoints.services.search import message_search_text

COLD_PER_THREAD = 10
HOT_THREAD = "scale-hot"
RARE_TERM = "quasar"
RARE_COUNT = 20
HOT_NODES = ["module:hot", "repo:bench"]
HOT_TAG = "perf"
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class ScaleData:
    """What has been loaded so far, and what the queries need to know about it."""

    workspace_pk: int
    hot_rows: int
    loaded: int = 0
    cold_threads: list[str] = field(default_factory=list)


def _state_text() -> str:
    return canonical_json(agent_state(300))


def _message_rows(
    thread_pk: int, count: int, rng: random.Random, start: datetime, rare: bool
) -> Iterator[dict[str, Any]]:
    for seq in range(1, count + 1):
        content = sentence(rng, 12)
        if rare and seq == 1:
            content = f"{content} {RARE_TERM.capitalize()} sighting noted."
        yield {
            "thread_id": thread_pk,
            "seq": seq,
            "message_id": f"m-{seq}",
            "role": ("user", "assistant")[seq % 2],
            "content": content,
            "metadata": {},
            "search_text": message_search_text(content, None),
            "size_bytes": len(content.encode("utf-8")),
            "created_at": start + timedelta(milliseconds=seq),
        }


def _medallion_rows(
    workspace_pk: int, start: int, count: int, rng: random.Random, planted: int
) -> Iterator[dict[str, Any]]:
    for n in range(start, start + count):
        if n < planted:
            nodes = sorted([*HOT_NODES, f"node-{rng.randrange(1000):03d}"])
            tags = sorted([HOT_TAG, f"tag-{rng.randrange(50):02d}"])
        else:
            nodes = sorted(rng.sample([f"node-{i:03d}" for i in range(1000)], 3))
            tags = sorted(rng.sample([f"tag-{i:02d}" for i in range(50)], 2))
        stamp = BASE_TIME + timedelta(seconds=n)
        yield {
            "workspace_id": workspace_pk,
            "graph_nodes": nodes,
            "tags": tags,
            "scope_key": hashlib.sha256(f"bench-scope-{n}".encode()).hexdigest(),
            "model": "bench",
            "high_level": sentence(rng, 10),
            "created_at": stamp,
            "updated_at": stamp,
        }


def grow(database_url: str, data: ScaleData, rows: int, log: Callable[[str], None]) -> None:
    """Load checkpoints, messages and medallions until each table holds `rows` rows of the workspace."""
    started = time.perf_counter()
    rng = random.Random(rows)  # nosec B311 # seeded generator for reproducible benchmark data, not a secret
    state = _state_text()
    now = datetime.now(UTC)
    first = data.loaded == 0
    with psycopg.connect(database_url) as conn:
        hot_rows = data.hot_rows if first else 0
        cold_count = (rows - data.loaded - hot_rows) // COLD_PER_THREAD
        offset = len(data.cold_threads)
        new_threads = [f"scale-{offset + i:07d}" for i in range(cold_count)]
        names = new_threads + ([HOT_THREAD] if first else [])
        copy_model(
            conn,
            Thread,
            (
                {**row, "last_message_seq": COLD_PER_THREAD}
                for row in thread_rows(data.workspace_pk, names, now)
            ),
        )
        pks = thread_pks(conn, data.workspace_pk, names)

        def checkpoints() -> Iterator[dict[str, Any]]:
            lengths = [(HOT_THREAD, hot_rows)] if first else []
            for thread_id, length in lengths + [(name, COLD_PER_THREAD) for name in new_threads]:
                yield from chain(
                    workspace_pk=data.workspace_pk,
                    thread_pk=pks[thread_id],
                    thread_id=thread_id,
                    length=length,
                    state=state,
                    start=BASE_TIME,
                )

        def messages() -> Iterator[dict[str, Any]]:
            if first:
                yield from _message_rows(pks[HOT_THREAD], hot_rows, rng, BASE_TIME, rare=False)
            for index, thread_id in enumerate(new_threads):
                rare = first and index < RARE_COUNT
                yield from _message_rows(pks[thread_id], COLD_PER_THREAD, rng, BASE_TIME, rare=rare)

        copy_model(conn, Checkpoint, checkpoints())
        copy_model(conn, Message, messages())
        added = hot_rows + cold_count * COLD_PER_THREAD
        copy_model(conn, Medallion, _medallion_rows(data.workspace_pk, data.loaded, added, rng, RARE_COUNT))
        conn.commit()
    with psycopg.connect(database_url, autocommit=True) as conn:
        for model in (Thread, Checkpoint, Message, Medallion):
            conn.execute(f"ANALYZE {model._meta.db_table}")
    data.loaded += added
    data.cold_threads += new_threads
    log(f"  scale: loaded to {data.loaded:,} rows per table in {time.perf_counter() - started:.0f} s")


def _time_requests(client: httpx.Client, urls: list[str]) -> Sample:
    sample = Sample()
    started = time.perf_counter()
    for url in urls:
        began = time.perf_counter()
        _expect(client.get(url), 200)
        sample.latencies.append(time.perf_counter() - began)
    sample.wall = time.perf_counter() - started
    return sample


def _deep_page_url(client: httpx.Client, first: str, pages: int) -> str:
    url = first
    for _ in range(pages - 1):
        following = _expect(client.get(url), 200).json()["next"]
        if not following:
            break
        url = following
    return url


def measure(api: ApiClients, data: ScaleData, requests: int, deep_page: int) -> dict[str, dict[str, Any]]:
    """p50/p99 of each read path at the current size (single client, sequential requests)."""
    rng = random.Random(data.loaded)  # nosec B311 # seeded generator for reproducible benchmark data, not a secret
    picks = rng.sample(data.cold_threads, min(requests, len(data.cold_threads)))
    head = f"cp-{COLD_PER_THREAD - 1:06d}"
    hot = f"threads/{HOT_THREAD}"
    scope = f"graph_nodes={','.join(HOT_NODES)}&tags={HOT_TAG}"
    with api.client() as client:
        deep = _deep_page_url(client, f"{hot}/checkpoints/?namespace=&limit=50", deep_page)
        deep_messages = _deep_page_url(client, f"{hot}/messages/?limit=50", deep_page)
        queries: dict[str, list[str]] = {
            "head (state/, cache miss)": [f"threads/{t}/state/" for t in picks],
            "head (state/, cached)": [f"threads/{picks[0]}/state/"] * requests,
            "restore by id": [f"threads/{t}/checkpoints/{head}/" for t in picks],
            "timeline page 1": [f"{hot}/checkpoints/?namespace=&limit=50"] * requests,
            f"timeline page {deep_page}": [deep] * requests,
            "workspace timeline page 1": ["checkpoints/?limit=50"] * requests,
            "message page 1": [f"{hot}/messages/?limit=50"] * requests,
            f"message page {deep_page}": [deep_messages] * requests,
            "message search (thread)": [f"{hot}/messages/?search=invoice"] * requests,
            "message search (workspace, rare word)": [f"messages/?search={RARE_TERM}"] * requests,
            "message search (workspace, common word)": ["messages/?search=invoice"] * requests,
            "medallion scope (20 matches)": [f"medallions/?{scope}"] * requests,
            "medallion scope (common node + tag)": ["medallions/?graph_nodes=node-007&tags=tag-03"]
            * requests,
        }
        results: dict[str, dict[str, Any]] = {}
        for name, urls in queries.items():
            _expect(client.get(urls[0]), 200)  # the first request may warm caches; it is not timed
            results[name] = _time_requests(client, urls[1:] if len(urls) > 1 else urls).summary()
        rare = _expect(client.get(f"messages/?search={RARE_TERM}"), 200).json()["results"]
        matches = _expect(client.get(f"medallions/?{scope}"), 200).json()["results"]
        results["message search (workspace, rare word)"]["results"] = len(rare)
        results["medallion scope (20 matches)"]["results"] = len(matches)
    return results


def bench_scale(
    *,
    api: ApiClients,
    database_url: str,
    workspace_pk: int,
    sizes: list[int],
    requests: int,
    hot_rows: int,
    forget_cache: Callable[[], None],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Grow the tables through `sizes` and time every read path at each; latency should stay flat."""
    data = ScaleData(workspace_pk=workspace_pk, hot_rows=hot_rows)
    deep_page = max(2, min(20, hot_rows // 50))
    per_size: dict[str, Any] = {}
    for size in sizes:
        grow(database_url, data, size, log)
        forget_cache()
        per_size[str(size)] = measure(api, data, requests, deep_page)
    first, last = str(sizes[0]), str(sizes[-1])
    flat = {
        name: round(per_size[last][name]["p50_ms"] / per_size[first][name]["p50_ms"], 2)
        for name in per_size[first]
        if per_size[first][name]["p50_ms"]
    }
    return {
        "sizes": sizes,
        "requests": requests,
        "hot_rows": hot_rows,
        "results": per_size,
        "growth_p50": flat,
    }
