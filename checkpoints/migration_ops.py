"""Migration operations that only apply to one database vendor (PostgreSQL GIN indexes, SQLite FTS5, ...)."""

from __future__ import annotations

from typing import Any

from django.db import migrations


class VendorSQL(migrations.RunSQL):
    """RunSQL that runs only on `vendor` ("postgresql" or "sqlite") and is a no-op elsewhere."""

    def __init__(self, vendor: str, sql: Any, reverse_sql: Any = None, **kwargs: Any) -> None:
        self.vendor = vendor
        super().__init__(sql, reverse_sql or migrations.RunSQL.noop, **kwargs)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        name, args, kwargs = super().deconstruct()
        return name, [self.vendor, *args], kwargs

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == self.vendor:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == self.vendor:
            super().database_backwards(app_label, schema_editor, from_state, to_state)
