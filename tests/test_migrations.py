"""The schema's history: the models and the migrations agree, and a database part way through the squashed
migrations is refused with a clear error (checkpoints/checks.py; docs/operating.md, "Upgrades and
migrations")."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from checkpoints.checks import SQUASHED, partial_schema_history, replaced_migrations

pytestmark = pytest.mark.django_db


def test_the_models_need_no_migration_the_repository_does_not_hold() -> None:
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def test_the_squashed_migration_replaces_the_eighteen_before_it_in_order() -> None:
    replaced = replaced_migrations()
    assert len(replaced) == 18
    assert replaced == sorted(replaced)
    assert (replaced[0], replaced[-1]) == ("0001_initial", "0018_checkpoint_indexes_ascending")


def test_a_new_database_records_the_squashed_migration_and_all_it_replaces_and_passes() -> None:
    applied = MigrationRecorder(connection).applied_migrations()
    assert {("checkpoints", name) for name in [SQUASHED, *replaced_migrations()]} <= set(applied)
    assert partial_schema_history(databases=["default"]) == []


@pytest.mark.parametrize("count", [1, 9, 17])
def test_a_database_part_way_through_the_replaced_migrations_is_refused_naming_where_it_stopped(
    count: int,
) -> None:
    recorder = MigrationRecorder(connection)
    names = replaced_migrations()
    for name in [SQUASHED, *names]:
        recorder.record_unapplied("checkpoints", name)
    for name in names[:count]:
        recorder.record_applied("checkpoints", name)
    [error] = partial_schema_history(databases=["default"])
    assert error.id == "cairn.E001"
    assert f"checkpoints.{names[count - 1]}" in error.msg
    assert "release of 2026-12-02 or earlier" in (error.hint or "")


def test_a_database_that_applied_the_eighteen_before_the_squashed_migration_existed_passes() -> None:
    recorder = MigrationRecorder(connection)
    recorder.record_unapplied("checkpoints", SQUASHED)
    assert partial_schema_history(databases=["default"]) == []


def test_a_check_without_a_database_reads_none() -> None:
    assert partial_schema_history(databases=None) == []
