"""LangGraph integration: `CairnSaver` / `AsyncCairnSaver`, drop-in checkpointers backed by Cairn, and
`CairnStore` / `AsyncCairnStore`, the long-term memory store (docs/store.md).

Needs the `langgraph` extra (`pip install 'cairn[langgraph]'`); the rest of the SDK does not.
"""

from __future__ import annotations

from checkpoints.sdk.langgraph.saver import AsyncCairnSaver, CairnSaver
from checkpoints.sdk.langgraph.store import AsyncCairnStore, CairnStore
from checkpoints.sdk.langgraph.values import ValueCodec

__all__ = ["AsyncCairnSaver", "AsyncCairnStore", "CairnSaver", "CairnStore", "ValueCodec"]
