"""Storage: what one conversation costs each saver in bytes, each saver alone on a fresh database of its own.

A chat graph (a human message in, an AI answer out, both natural prose drawn from `corpus.txt`) runs for N
turns on one thread with `AsyncCairnSaver` (over HTTP, the Procfile's gunicorn) and, separately, with
LangGraph's `AsyncPostgresSaver`. Around each run the benchmark reads, on that saver's own database:

- relation growth: every table's heap, TOAST and each index (`pg_relation_size`), so the total is
  `pg_total_relation_size` growth;
- WAL: the flushed WAL position before and after. WAL is cluster-wide, so that figure holds whatever
  anything else on the server wrote meanwhile; with `pg_walinspect` the records that touch this database's
  blocks (and the commits of their transactions) are summed too, which other databases cannot inflate;
- dead tuples, updates and HOT updates (`pg_stat_user_tables`), read after the saver's connections closed
  (a backend flushes its statistics when it exits);
- the floor: the bytes of the new messages' text, the information a turn adds.

Explained with figures in docs/performance.md; the tables and their indexes in docs/storage.md.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Annotated, Any, TypedDict

import psycopg
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from checkpoints.bench import server
from checkpoints.bench.stats import BenchError
from checkpoints.sdk.langgraph import AsyncCairnSaver

CORPUS = Path(__file__).with_name("corpus.txt")
WAL_NOTE = (
    "WAL is cluster-wide: wal_bytes holds anything the server wrote meanwhile (run it on a quiet server); "
    "wal_bytes_database counts only the records touching this database (pg_walinspect)"
)

RELATIONS_SQL = """
SELECT t.relname, t.relname, 'heap', pg_relation_size(t.oid)
  FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE n.nspname = 'public' AND t.relkind = 'r'
UNION ALL
SELECT t.relname, t.relname || ' (TOAST)', 'toast', pg_total_relation_size(t.reltoastrelid)
  FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE n.nspname = 'public' AND t.relkind = 'r' AND t.reltoastrelid <> 0
UNION ALL
SELECT t.relname, i.relname, 'index', pg_relation_size(i.oid)
  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
  JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE n.nspname = 'public'
"""
STATS_SQL = """
SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, n_dead_tup FROM pg_stat_user_tables
"""
# The records that touch a block of this database, and the other records (commits) of their transactions.
WAL_DATABASE_SQL = """
WITH r AS (
  SELECT xid, record_length, block_ref FROM pg_get_wal_records_info(%(start)s::pg_lsn, %(end)s::pg_lsn)
),
ours AS (SELECT DISTINCT xid FROM r WHERE block_ref ~ %(pattern)s AND xid <> '0')
SELECT coalesce(sum(record_length), 0) FROM r WHERE block_ref ~ %(pattern)s OR xid IN (SELECT xid FROM ours)
"""


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@cache
def corpus() -> tuple[str, ...]:
    """The sentences the chat is made of (one a line, written as customer-support questions and answers)."""
    return tuple(line.strip() for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip())


def _lines(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(corpus()) for _ in range(rng.randint(low, high)))


async def _converse(saver: BaseCheckpointSaver[Any], turns: int, meter: WalMeter) -> int:
    """`turns` turns on one new thread; returns the floor: the bytes of every new message's text."""
    rng = random.Random(17)  # nosec B311 # seeded, so both savers get the same conversation
    floor = 0

    def assistant(state: ChatState) -> dict[str, Any]:
        nonlocal floor
        answer = _lines(rng, 2, 3)
        floor += len(answer.encode())
        return {"messages": [AIMessage(content=answer)]}

    builder = StateGraph(ChatState)
    builder.add_node("assistant", assistant)
    builder.add_edge(START, "assistant")
    builder.add_edge("assistant", END)
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": f"chat-{uuid.uuid4().hex}"}}
    for _ in range(turns):
        question = _lines(rng, 1, 2)
        floor += len(question.encode())
        await graph.ainvoke({"messages": [HumanMessage(content=question)]}, config)
        meter.tick()
    return floor


def _wait_for_no_other_backends(conn: psycopg.Connection[Any], timeout: float = 10) -> None:
    # A backend flushes its table statistics when it exits: once the saver's connections are gone, the
    # counters are complete.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
        if row == (0,):
            return
        time.sleep(0.1)
    raise BenchError("the saver's connections did not close")


def snapshot(database_url: str) -> dict[str, Any]:
    """Sizes of every relation and table statistics of the database, once nothing else is connected to
    it."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        _wait_for_no_other_backends(conn)
        conn.execute("SELECT pg_stat_force_next_flush()")
        sizes = conn.execute(RELATIONS_SQL).fetchall()
        stats = conn.execute(STATS_SQL).fetchall()
    counters = ("ins", "upd", "hot_upd", "del", "dead")
    return {
        "relations": {
            name: {"table": table, "kind": kind, "bytes": int(size)} for table, name, kind, size in sizes
        },
        "stats": {row[0]: dict(zip(counters, map(int, row[1:]), strict=True)) for row in stats},
    }


class WalMeter:
    """The WAL of one database, summed in stretches of `every` turns while the conversation runs, from
    pg_walinspect: the records that touch the database's blocks and the other records (commits) of their
    transactions. Read in stretches because the server recycles WAL segments at each checkpoint, so a
    range read once at the end could find its start gone. `bytes` is None without pg_walinspect."""

    def __init__(self, database_url: str, every: int = 20) -> None:
        self.conn = psycopg.connect(database_url, autocommit=True)
        self.every, self.turns = every, 0
        self.bytes: int | None = 0
        try:
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        except psycopg.Error:
            self.bytes = None
        row = self.conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()
        self.pattern = rf"rel \d+/{row[0] if row else 0}/"
        self.start = self.mark = self._flushed()

    def _flushed(self) -> str:
        # pg_walinspect reads only WAL already flushed.
        row = self.conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
        return str(row[0]) if row else "0/0"

    def tick(self) -> None:
        self.turns += 1
        if self.turns % self.every == 0:
            self.read()

    def read(self) -> None:
        """Add the database's WAL since the last read."""
        end = self._flushed()
        if self.bytes is not None and end != self.mark:
            try:
                row = self.conn.execute(
                    WAL_DATABASE_SQL, {"start": self.mark, "end": end, "pattern": self.pattern}
                ).fetchone()
                self.bytes += int(row[0]) if row else 0
            except psycopg.Error:  # the stretch recycled already (a very long one): no figure then
                self.bytes = None
        self.mark = end

    def close(self) -> dict[str, int | None]:
        """Read the rest and stop: the cluster's WAL since the start and this database's share of it."""
        self.read()
        row = self.conn.execute(
            "SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)", (self.mark, self.start)
        ).fetchone()
        self.conn.close()
        return {"wal_bytes": int(row[0]) if row else 0, "wal_bytes_database": self.bytes}


def growth(
    before: dict[str, Any], after: dict[str, Any], wal: dict[str, int | None], *, turns: int, floor: int
) -> dict[str, Any]:
    """What one run added: bytes per table and per index, WAL, updates and dead tuples, per turn too."""
    relations = {
        name: {**rel, "bytes": rel["bytes"] - before["relations"].get(name, {"bytes": 0})["bytes"]}
        for name, rel in after["relations"].items()
    }
    stats = {
        table: {key: value - before["stats"].get(table, {}).get(key, 0) for key, value in counts.items()}
        for table, counts in after["stats"].items()
    }
    written = {table: counts for table, counts in stats.items() if counts["ins"] or counts["upd"]}
    total = sum(rel["bytes"] for rel in relations.values())
    return {
        "relation_bytes": total,
        "relation_bytes_per_turn": total // turns,
        **wal,
        "wal_bytes_per_turn": (wal["wal_bytes"] or 0) // turns,
        "wal_bytes_database_per_turn": (wal["wal_bytes_database"] or 0) // turns,
        "floor_bytes": floor,
        "floor_bytes_per_turn": floor // turns,
        "dead_tuples": sum(counts["dead"] for counts in written.values()),
        "updates": sum(counts["upd"] for counts in written.values()),
        "hot_updates": sum(counts["hot_upd"] for counts in written.values()),
        "tables": {
            table: {
                "bytes": sum(rel["bytes"] for rel in relations.values() if rel["table"] == table),
                **counts,
            }
            for table, counts in written.items()
        },
        # Every heap, TOAST and index that grew, largest first.
        "relations": {
            name: rel["bytes"]
            for name, rel in sorted(relations.items(), key=lambda item: -item[1]["bytes"])
            if rel["bytes"] > 0
        },
    }


def _count(database_url: str, query: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(query).fetchone()
        return int(row[0]) if row else 0


def cairn_alone(
    *, server_url: str, redis_url: str, database: str, turns: int, workers: int, root: Path
) -> dict[str, Any]:
    """The conversation through Cairn's HTTP API (the Procfile's gunicorn), alone on a fresh database."""
    with server.bench_database(server_url, database) as url:
        stack = server.Stack.create(url, redis_url, root / f"storage-cairn-{turns}")
        stack.manage("migrate", "--no-input")
        api_key = stack.api_key("bench")
        before = snapshot(url)
        meter = WalMeter(url)
        try:
            with server.Gunicorn(stack, workers=workers) as web:
                floor = asyncio.run(_converse_cairn(web.url, api_key, turns, meter))
        finally:
            stack.forget_cache()
            wal = meter.close()
        result = growth(before, snapshot(url), wal, turns=turns, floor=floor)
        result["checkpoints"] = _count(url, "SELECT count(*) FROM checkpoints_checkpoint")
    return result


async def _converse_cairn(base_url: str, api_key: str, turns: int, meter: WalMeter) -> int:
    saver = AsyncCairnSaver(base_url, api_key)
    try:
        return await _converse(saver, turns, meter)
    finally:
        await saver.aclose()


async def _converse_postgres(database_url: str, turns: int, meter: WalMeter) -> int:
    async with AsyncPostgresSaver.from_conn_string(database_url) as saver:
        return await _converse(saver, turns, meter)


async def _postgres_setup(database_url: str) -> None:
    async with AsyncPostgresSaver.from_conn_string(database_url) as saver:
        await saver.setup()


def postgres_alone(*, server_url: str, database: str, turns: int) -> dict[str, Any]:
    """The conversation through LangGraph's AsyncPostgresSaver, alone on a fresh database."""
    with server.bench_database(server_url, database) as url:
        asyncio.run(_postgres_setup(url))
        before = snapshot(url)  # after its tables exist, before the first turn
        meter = WalMeter(url)
        try:
            floor = asyncio.run(_converse_postgres(url, turns, meter))
        finally:
            wal = meter.close()
        result = growth(before, snapshot(url), wal, turns=turns, floor=floor)
        result["checkpoints"] = _count(url, "SELECT count(*) FROM checkpoints")
    return result


def bench_storage(
    *,
    server_url: str,
    redis_url: str,
    database: str,
    turns: int,
    workers: int,
    root: Path,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Bytes, WAL and dead tuples of a `turns`-turn conversation with each saver, each on a fresh database
    (`<database>_postgres`, `<database>_cairn`, dropped afterwards)."""
    log(f"  storage: a {turns}-turn conversation with each saver, each alone on a fresh database")
    results: dict[str, Any] = {"turns": turns, "note": WAL_NOTE}
    results["postgres"] = postgres_alone(server_url=server_url, database=f"{database}_postgres", turns=turns)
    results["cairn"] = cairn_alone(
        server_url=server_url,
        redis_url=redis_url,
        database=f"{database}_cairn",
        turns=turns,
        workers=workers,
        root=root,
    )
    pg, ours = results["postgres"], results["cairn"]
    for key in ("relation_bytes", "wal_bytes", "wal_bytes_database"):
        results[f"ratio_{key}"] = round(ours[key] / pg[key], 3) if pg[key] and ours[key] is not None else None
    return results
