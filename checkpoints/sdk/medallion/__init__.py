"""medallion on Cairn: `MedallionStore`, `checkpoint_session`, `load_medallions_for_scope`, the seed's models
(validated as they are built) and exceptions.

    from checkpoints.sdk.medallion import (                       # was: from medallion import (
        Evidence, MedallionScope, MedallionStore, checkpoint_session, load_medallions_for_scope,
    )

    store = MedallionStore.from_env()                             # was: SQLiteMedallionStore("medallions.db")
    scope = MedallionScope(graph_nodes=["repo:muse", "module:cli"], tags=["project_state"])
    medallion = checkpoint_session(store, my_llm, scope, Evidence(session_summary="Implemented CLI routing"))
    for m in load_medallions_for_scope(store, MedallionScope(graph_nodes=["repo:muse"]), limit=5):
        print(m.meta.medallion_id, m.summary.high_level)

`my_llm` (the seed's `MedallionLLM`: `generate`, `update`) runs in this process and the server validates
and stores what it writes; pass None to have the server's provider (extractive by default) write it. Every
version is kept as a revision. The table in docs/integrations/medallion.md lists every difference from the
seed.
"""

from __future__ import annotations

from checkpoints.sdk.medallion.errors import LLMError, MedallionError, SchemaValidationError, StoreError
from checkpoints.sdk.medallion.models import (
    Affordances,
    Decision,
    Evidence,
    Medallion,
    MedallionAffordances,
    MedallionDecision,
    MedallionMeta,
    MedallionOpenQuestion,
    MedallionScope,
    MedallionStatus,
    MedallionSummary,
    OpenQuestion,
    Priority,
    Subsystem,
    SubsystemStatus,
    Summary,
)
from checkpoints.sdk.medallion.session import (
    _checkpoint_session_async,
    _load_medallions_for_scope_async,
    acheckpoint_session,
    aload_medallions_for_scope,
    checkpoint_session,
    load_medallions_for_scope,
)
from checkpoints.sdk.medallion.steps import MedallionLLM
from checkpoints.sdk.medallion.store import MedallionStore, SQLiteMedallionStore

SchemaError = SchemaValidationError  # Cairn's earlier name

__all__ = [
    "Affordances",
    "Decision",
    "Evidence",
    "LLMError",
    "Medallion",
    "MedallionAffordances",
    "MedallionDecision",
    "MedallionError",
    "MedallionLLM",
    "MedallionMeta",
    "MedallionOpenQuestion",
    "MedallionScope",
    "MedallionStatus",
    "MedallionStore",
    "MedallionSummary",
    "OpenQuestion",
    "Priority",
    "SQLiteMedallionStore",
    "SchemaError",
    "SchemaValidationError",
    "StoreError",
    "Subsystem",
    "SubsystemStatus",
    "Summary",
    "_checkpoint_session_async",
    "_load_medallions_for_scope_async",
    "acheckpoint_session",
    "aload_medallions_for_scope",
    "checkpoint_session",
    "load_medallions_for_scope",
]
