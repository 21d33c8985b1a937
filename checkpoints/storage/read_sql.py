"""The reads every thread-scoped request starts with, as static SQL: a thread by its public id, a checkpoint
of a thread with its packed documents' parts joined in.

It exists so that a restore is one prepared statement whose parts travel as stored (docs/performance.md);
what a read may return is decided by the services and `Checkpoint.is_readable`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from checkpoints import packing
from checkpoints.models import Checkpoint, Thread
from checkpoints.models.value import put_parts_back, unpack
from checkpoints.storage.model_rows import CHECKPOINT, THREAD, VALUE, columns, load, width

# A thread by its public id (every thread-scoped read starts here).
THREAD_BY_ID = (
    f"SELECT {columns(Thread, 't')} FROM {THREAD} t "  # nosec B608 # names from the models; values bound
    "WHERE t.workspace_id = %(workspace)s AND t.thread_id = %(thread_id)s"
)


# The parts a row's packed state and context name (PostgreSQL; the header format is checkpoints.packing's):
# their names with each text's length, as JSON ([[name, length or null], ...]), and their texts run together.
# A restore thus fetches its parts in its own statement, and their text travels as it is stored (escaped as
# JSON, it cost server and client time in proportion to the state).
def _header(column: str) -> str:
    return f"CASE WHEN left({column}, 1) = '{packing.MARK}' THEN split_part({column}, E'\\n', 1) ELSE '' END"


PARTS_OF_ROW = {
    "postgresql": "LEFT JOIN LATERAL (SELECT json_agg(json_build_array(r.m[1], length(v.body)) "  # nosec B608 # names from the models
    "ORDER BY r.n)::text AS names, string_agg(v.body, '' ORDER BY r.n) AS texts "
    f"FROM regexp_matches({_header('c.state')} || ',' || {_header('c.context')}, "
    f"':({packing.NAME_PATTERN})', 'g') WITH ORDINALITY AS r(m, n) LEFT JOIN {VALUE} v "
    "ON v.workspace_id = c.workspace_id "
    "AND v.digest = decode(rpad(translate(r.m[1], '-_', '+/'), (length(r.m[1]) + 3) / 4 * 4, '='), 'base64')"
    ") p ON true",
    "sqlite": "",  # unpack() reads them, in-process
}
PARTS_COLUMNS = {"postgresql": "p.names, p.texts", "sqlite": "NULL, NULL"}


@cache
def checkpoint_in_thread_sql(vendor: str, *, in_namespace: bool) -> str:
    """A checkpoint of a thread by public ids, with its thread and its parts: restore, and every checkpoint
    sub-resource. No ORDER BY: with one, a planner short of statistics (a young table) may walk a timeline
    index backwards to satisfy it; the few candidates (one per namespace holding the id) are ordered by the
    caller."""
    namespace = " AND c.namespace = %(namespace)s" if in_namespace else ""
    return (
        f"SELECT {columns(Checkpoint, 'c')}, {columns(Thread, 't')}, {PARTS_COLUMNS[vendor]} "  # nosec B608 # table and column names from the models; every value is bound
        f"FROM {CHECKPOINT} c JOIN {THREAD} t ON t.id = c.thread_id {PARTS_OF_ROW[vendor]} "
        "WHERE t.workspace_id = %(workspace)s "
        "AND c.workspace_id = %(workspace)s AND t.thread_id = %(thread_id)s "
        f"AND c.checkpoint_id = %(checkpoint_id)s{namespace} LIMIT 10"
    )


def load_checkpoint_with_thread(row: Sequence[Any], workspace: Any) -> Checkpoint:
    """A row of `checkpoint_in_thread_sql` as a checkpoint whose thread (and its workspace) are in hand, its
    packed documents whole again."""
    split = width(Checkpoint)
    checkpoint = load(Checkpoint, row[:split])
    thread = load(Thread, row[split:-2])  # joined on the checkpoint's thread, in the workspace
    checkpoint.thread = thread
    checkpoint.workspace = workspace
    thread.workspace = workspace
    if not put_fetched_parts(checkpoint, *row[-2:]):
        unpack([checkpoint])
    return checkpoint


def put_fetched_parts(checkpoint: Checkpoint, names: str | None, texts: str | None) -> bool:
    """Assemble a checkpoint's packed documents from the parts its row fetched (`PARTS_COLUMNS`); False if
    the row fetched none (SQLite, or no packed document): `unpack` then reads what it names."""
    if names is None:
        return False
    parts, start = {}, 0
    for name, length in json.loads(names):
        if length is not None:
            parts[packing.digest_named(name)] = (texts or "")[start : start + length]
            start += length
    put_parts_back(checkpoint, parts)
    return True
