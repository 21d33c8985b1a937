"""Writers by name: a checkpoint records its writer as "key:<prefix>" (stable, docs/checkpoints.md); the
dashboard shows the API key's name beside it, read for a whole page in one query."""

from __future__ import annotations

from collections.abc import Iterable

from checkpoints.models import ApiKey, Workspace

KEY_WRITER_PREFIX = "key:"


def writer_names(workspace: Workspace, writers: Iterable[str]) -> dict[str, str]:
    """The name of each "key:<prefix>" writer among `writers` (one query; none without key writers)."""
    prefixes = {w.removeprefix(KEY_WRITER_PREFIX) for w in writers if w.startswith(KEY_WRITER_PREFIX)}
    if not prefixes:
        return {}
    keys = ApiKey.objects.filter(workspace=workspace, prefix__in=prefixes).values_list("prefix", "name")
    return {f"{KEY_WRITER_PREFIX}{prefix}": name for prefix, name in keys}
