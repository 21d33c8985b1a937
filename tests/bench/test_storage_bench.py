"""`manage.py bench --quick --only storage`: each saver alone on a fresh database, and a report whose bytes,
WAL and dead tuples are all there, positive where they must be, and above the floor (the new text)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from checkpoints.bench.server import database_name, with_database
from checkpoints.bench.storage import corpus

REPO = Path(__file__).resolve().parents[2]


def test_the_corpus_is_varied_natural_prose() -> None:
    sentences = corpus()
    assert len(sentences) >= 300
    assert len(set(sentences)) == len(sentences)
    assert len({word.lower().strip(".,?;'") for line in sentences for word in line.split()}) > 1000
    assert all(line[0].isupper() and line[-1] in ".?!" for line in sentences)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_it_measures_each_saver_alone_in_a_quick_run(tmp_path: Path) -> None:
    server_url = os.environ["DATABASE_URL"]
    bench_db = f"bytes_{database_name(server_url) or 'cairn'}_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "SECRET_KEY": "bench-storage-test", "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "bench", "--quick", "--only", "storage",
         "--database", bench_db, "--output", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    for title in ("Storage of a 10-turn conversation, each saver alone on a fresh database",
                  "Storage of a 30-turn conversation", "WAL is cluster-wide", "Cairn's bytes by relation",
                  "checkpoints_thread", "Storage growth, relation bytes per turn"):  # fmt: skip
        assert title in result.stdout, result.stdout
    results = json.loads((tmp_path / "latest.json").read_text())
    assert set(results) >= {"storage"} and "saves" not in results
    assert [run["turns"] for run in results["storage"]] == [10, 30]
    for run in results["storage"]:
        postgres, cairn = run["postgres"], run["cairn"]
        # Three checkpoints a turn (input, loop, the answer) with either saver.
        assert postgres["checkpoints"] == cairn["checkpoints"] == 3 * run["turns"]
        # The same conversation: the same new text.
        assert postgres["floor_bytes"] == cairn["floor_bytes"] > 50 * run["turns"]
        for saver in (postgres, cairn):
            assert saver["relation_bytes"] > saver["floor_bytes"]
            assert saver["wal_bytes"] >= saver["wal_bytes_database"] > saver["floor_bytes"]
            assert saver["relation_bytes_per_turn"] == saver["relation_bytes"] // run["turns"]
            assert 0 <= saver["hot_updates"] <= saver["updates"] and saver["dead_tuples"] >= 0
            assert sum(saver["relations"].values()) <= saver["relation_bytes"]
        assert set(cairn["tables"]) >= {"checkpoints_checkpoint", "checkpoints_thread"}
        assert set(postgres["tables"]) >= {"checkpoints", "checkpoint_blobs", "checkpoint_writes"}
        assert all(table["bytes"] >= 0 and table["ins"] > 0 for table in postgres["tables"].values())
        assert run["ratio_relation_bytes"] == round(cairn["relation_bytes"] / postgres["relation_bytes"], 3)
    # Each saver had a database of its own, and both are gone.
    with psycopg.connect(with_database(server_url, "postgres")) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (f"{bench_db}%",)
        ).fetchall()
    assert rows == []
