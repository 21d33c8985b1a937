"""LangGraph integration: `CairnSaver` / `AsyncCairnSaver`, drop-in checkpointers backed by Cairn.

Needs the `langgraph` extra (`pip install 'cairn[langgraph]'`); the rest of the SDK does not.
"""

from __future__ import annotations

from checkpoints.sdk.langgraph.saver import AsyncCairnSaver, CairnSaver
from checkpoints.sdk.langgraph.values import ValueCodec

__all__ = ["AsyncCairnSaver", "CairnSaver", "ValueCodec"]
