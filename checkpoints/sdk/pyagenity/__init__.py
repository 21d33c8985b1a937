"""PyAgenity parity: a checkpointer with PyAgenity's method names (state, messages, threads; async and sync
twins), keyed by `config = {"thread_id": ..., "user_id": ...}`, on Cairn.

    from checkpoints.sdk.pyagenity import CairnCheckpointer      # was: PgCheckpointer(postgres_dsn=..., ...)

    checkpointer = CairnCheckpointer.from_env()
    config = {"thread_id": "conv_123", "user_id": "alice"}
    await checkpointer.aput_state(config, {"context": [], "step": 1})
    await checkpointer.aput_messages(config, [{"role": "user", "content": "What's the weather?"}])
    recent = await checkpointer.alist_messages(config, search="weather", limit=20)

A user never sees or writes another user's threads: every call names its user, the server filters lists by
user, and the checkpointer checks the owner of the thread before reading or writing it (another user's thread
answers NotFound, exactly like a missing one). Listing threads without a user is refused rather than
silently listing a default user's. Cairn's state cache (Redis in production) sits in front of the database
and is never staler than it, so `aget_state_cache` is `aget_state`.

With PyAgenity installed (`pip install 'cairn[pyagenity]'`, Python 3.12+), `CairnCheckpointer` is a
PyAgenity `BaseCheckpointer`: `graph.compile(checkpointer=CairnCheckpointer.from_env())`. The table in
docs/integrations/pyagenity.md lists every difference from the seed.
"""

from checkpoints.sdk.pyagenity.checkpointer import CairnCheckpointer
from checkpoints.sdk.pyagenity.convert import PYAGENITY_INSTALLED, FallbackThreadInfo, ThreadInfo

__all__ = ["PYAGENITY_INSTALLED", "CairnCheckpointer", "FallbackThreadInfo", "ThreadInfo"]
