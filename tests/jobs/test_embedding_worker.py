"""Embedding in the background on a real `celery worker` (docs/store.md, "Embedding in the background"): a
store put and a medallion write are stored at once without vectors; the worker computes them after commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.jobs.stack import Stack, wait_for
from tests.jobs.test_worker import make_stack  # noqa: F401  (fixture: the embedded and the Redis stack)

pytestmark = pytest.mark.slow


def test_the_worker_embeds_what_the_writes_left_to_it(make_stack: Callable[..., Stack]) -> None:  # noqa: F811
    # The local model, sent to the worker as a remote one would be (`auto` does that for `openai`).
    stack = make_stack(CAIRN_EMBEDDINGS_PROVIDER="wordllama", CAIRN_EMBEDDINGS_IN_BACKGROUND="always")
    drive = stack.driver
    drive("store_put_item", key="dog", text="a dog in the park")
    medallion = drive("medallion_write", tag="pets", text="Walking the dog every morning.")
    # No worker yet: both are stored, without vectors.
    assert drive("embedded") == {"items": {"dog": False}, "medallions": {str(medallion["pk"]): False}}

    stack.start_worker()

    def everything_embedded(state: dict[str, Any]) -> bool:
        return all(state["items"].values()) and all(state["medallions"].values())

    done = wait_for(lambda: drive("embedded"), everything_embedded, timeout=120, what="the vectors")
    assert done == {"items": {"dog": True}, "medallions": {str(medallion["pk"]): True}}
    log = stack.log("worker")
    assert "checkpoints.tasks.embed_store_item" in log and "checkpoints.tasks.embed_medallion" in log
