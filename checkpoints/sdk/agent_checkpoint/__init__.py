"""agent-checkpoint parity: the `Checkpointable` mixin (state_dict / load_state_dict / clone), a manager
(save, load, history, diff, rollback) on a memory, file or Cairn backend, the `@checkpoint` decorator, and
schema migrations.

    from checkpoints.sdk.agent_checkpoint import Checkpointable, CheckpointManager, checkpoint

    class MyAgent(Checkpointable):
        def __init__(self):
            self.memory, self.call_count, self._cache = [], 0, {}   # _cache is not checkpointed

    manager = CheckpointManager(backend="cairn")         # was: CheckpointManager(backend="memory")
    manager.save("session_123", agent)
    with manager.rollback("before_risky_op", agent):     # restores on exception, re-raises
        risky_operation(agent)

`backend="memory"` and `backend="file"` (fmt="json" | "pickle") behave as the seed's. On Cairn, each key is
a Cairn thread and each save a checkpoint in it (agent_id = the class name, schema_version = the class's
checkpoint version), so history, lineage, diffs and TTLs come from Cairn. States are stored with a
tagged encoding (checkpoints.sdk.tagged): tuples, sets, datetimes and int dict keys come back as they were,
and pickle is never used unless the manager is created with `allow_pickle=True`.
"""

from __future__ import annotations

from checkpoints.sdk.agent_checkpoint.backends import Backend, CairnBackend, FileBackend, MemoryBackend
from checkpoints.sdk.agent_checkpoint.core import (
    Checkpointable,
    MigrationError,
    migrate,
    register_migration,
)
from checkpoints.sdk.agent_checkpoint.manager import CairnCheckpointManager, CheckpointManager, checkpoint

__all__ = [
    "Backend",
    "CairnBackend",
    "CairnCheckpointManager",
    "CheckpointManager",
    "Checkpointable",
    "FileBackend",
    "MemoryBackend",
    "MigrationError",
    "checkpoint",
    "migrate",
    "register_migration",
]
