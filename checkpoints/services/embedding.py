"""When vectors are computed (docs/store.md, "Embedding in the background").

The local model (wordllama) embeds in milliseconds: a write computes its vectors inline, in its own
transaction. A remote provider (`openai`) costs a network round trip per write, so by default the write
stores the item (or medallion) at once without vectors and, once it commits, sends a Celery task that
computes them; until then it is found by exact filters and scope, and ranked after the embedded ones.
`CAIRN_EMBEDDINGS_IN_BACKGROUND` (auto | always | never) chooses."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from kombu.exceptions import KombuError

from checkpoints.models import StoreItem
from checkpoints.services.store_index import vectors_changed
from checkpoints.services.store_vectors import item_vectors

logger = logging.getLogger(__name__)

# Registered task names (checkpoints/tasks.py): services send tasks by name, as `job_submit` does.
EMBED_STORE_ITEM_TASK = "checkpoints.tasks.embed_store_item"
EMBED_MEDALLION_TASK = "checkpoints.tasks.embed_medallion"
REMOTE_PROVIDERS = ("openai",)
CHOICES = ("auto", "always", "never")


def embeds_in_background() -> bool:
    """Whether writes leave their vectors to a Celery task (see the module docstring)."""
    config = settings.CAIRN_EMBEDDINGS
    choice = str(config.get("IN_BACKGROUND", "auto")).lower()
    if choice not in CHOICES:
        raise ImproperlyConfigured(
            f"CAIRN_EMBEDDINGS_IN_BACKGROUND must be one of {', '.join(CHOICES)}, not {choice!r}."
        )
    if config["PROVIDER"] == "none" or choice == "never":
        return False
    return choice == "always" or config["PROVIDER"] in REMOTE_PROVIDERS


def send_after_commit(task: str, *args: Any) -> None:
    """Send `task(*args)` once the caller's transaction commits. A broker that refuses it leaves the row
    without vectors (still found by exact filters), logged, rather than failing a write already stored."""

    def publish() -> None:
        try:
            current_app.tasks[task].apply_async(args=args, retry=False)
        except (KombuError, OSError) as exc:  # as in job_submit: kombu's errors, the filesystem broker's
            logger.warning("broker unavailable, %s%r not sent: %s", task, args, exc)

    transaction.on_commit(publish)


def store_item_embed_later(*, item_pk: int, updated_at: datetime, index: list[str] | bool | None) -> None:
    """Call inside the put's transaction: the item's vectors are computed by a task after commit."""
    index_paths = index if isinstance(index, list) else None
    send_after_commit(EMBED_STORE_ITEM_TASK, item_pk, updated_at.isoformat(), index_paths)


def store_item_embed(*, item_pk: int, updated_at: str, index: list[str] | None) -> bool:
    """The task's work: embed the item as it was written at `updated_at`. A later put (or a delete) wins:
    the conditional UPDATE then changes nothing, so a late or repeated task never stores stale vectors."""
    written_at = datetime.fromisoformat(updated_at)
    item = StoreItem.objects.filter(pk=item_pk, updated_at=written_at).first()
    if item is None:
        return False
    blob = item_vectors(item.value, index=index, vectors=None)  # the slow part: outside any transaction
    with transaction.atomic():
        changed = StoreItem.objects.filter(pk=item_pk, updated_at=written_at).update(vectors=blob)
        if changed:
            vectors_changed(item.workspace_id)
    return bool(changed)
