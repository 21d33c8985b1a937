"""System checks (`manage.py check --database default`, and `migrate`, which runs them).

A database whose schema history stopped part way through the migrations that
`0001_squashed_0018_checkpoint_indexes_ascending` replaces can use neither: Django leaves the squashed one
out and migrates nothing, and the service would then fail on the first missing column. This check says so
before anything runs (docs/operating.md, "Upgrades and migrations").
"""

from __future__ import annotations

import importlib
from typing import Any

from django.core.checks import Error, Tags, register
from django.db import connections
from django.db.migrations.recorder import MigrationRecorder

SQUASHED = "0001_squashed_0018_checkpoint_indexes_ascending"


def replaced_migrations() -> list[str]:
    """The names of the migrations the squashed one replaces, in order."""
    migration = importlib.import_module(f"checkpoints.migrations.{SQUASHED}").Migration
    return [name for _app, name in migration.replaces]


@register(Tags.database)
def partial_schema_history(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[Error]:
    errors = []
    replaced = replaced_migrations()
    for alias in databases or ():
        recorder = MigrationRecorder(connections[alias])
        if not recorder.has_table():
            continue
        applied = {name for app, name in recorder.applied_migrations() if app == "checkpoints"}
        done = [name for name in replaced if name in applied]
        if done and len(done) < len(replaced):
            errors.append(
                Error(
                    f"database {alias!r} stopped at checkpoints.{done[-1]}, part way through the migrations "
                    f"that checkpoints.{SQUASHED} replaces",
                    hint="Migrate it with a Cairn release of 2026-12-02 or earlier first, then with this one "
                    "(docs/operating.md, 'Upgrades and migrations').",
                    id="cairn.E001",
                )
            )
    return errors
