"""Message search (checkpoints.services.search): the normalised search text and byte size of each message,
a pg_trgm GIN index on PostgreSQL, and an FTS5 trigram table kept in sync by triggers on SQLite.

SQLite note: the triggers live on checkpoints_message. A later migration that makes Django rebuild that table
on SQLite (some AlterField/RemoveField operations) drops them; it must create them again. A test
(tests/services/test_messages_search.py) fails if they are missing.
"""

from typing import Any

from django.db import migrations, models

from checkpoints.migration_ops import VendorSQL

FTS = "checkpoints_message_fts"


def backfill(apps: Any, schema_editor: Any) -> None:
    """Existing messages get the same search text and size messages_append gives new ones."""
    from checkpoints.services.messages import message_size_bytes
    from checkpoints.services.search import message_search_text

    Message = apps.get_model("checkpoints", "Message")
    for message in Message.objects.all().iterator(chunk_size=500):
        message.search_text = message_search_text(message.content, message.content_blocks)
        message.size_bytes = message_size_bytes(
            {
                field: getattr(message, field)
                for field in (
                    "content",
                    "content_blocks",
                    "tool_calls",
                    "tool_call_id",
                    "name",
                    "usage",
                    "metadata",
                )
            }
        )
        message.save(update_fields=["search_text", "size_bytes"])


class Migration(migrations.Migration):

    dependencies = [
        ('checkpoints', '0002_postgres_gin_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='search_text',
            field=models.TextField(blank=True, default='', editable=False),
        ),
        migrations.AddField(
            model_name='message',
            name='size_bytes',
            field=models.BigIntegerField(default=0),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        # PostgreSQL: LIKE '%term%' on the folded text, answered by a trigram index (any script; C.UTF-8 or
        # any UTF-8 locale classifies CJK and Arabic letters as word characters, so they get trigrams).
        VendorSQL("postgresql", "CREATE EXTENSION IF NOT EXISTS pg_trgm"),
        VendorSQL(
            "postgresql",
            "CREATE INDEX message_search_trgm ON checkpoints_message USING gin (search_text gin_trgm_ops)",
            "DROP INDEX IF EXISTS message_search_trgm",
        ),
        # Thread `q` filter (name icontains -> UPPER(name::text) LIKE UPPER(...)).
        VendorSQL(
            "postgresql",
            "CREATE INDEX thread_name_trgm ON checkpoints_thread USING gin ((upper((name)::text)) gin_trgm_ops)",
            "DROP INDEX IF EXISTS thread_name_trgm",
        ),
        # SQLite: an external-content FTS5 table over search_text. case_sensitive 1 because the text is
        # already folded (FTS5's own folding differs from Python's in corner cases).
        VendorSQL(
            "sqlite",
            [
                f"CREATE VIRTUAL TABLE {FTS} USING fts5(search_text, content='checkpoints_message', "
                "content_rowid='id', tokenize='trigram case_sensitive 1')",
                f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON checkpoints_message BEGIN "
                f"INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text); END",
                f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON checkpoints_message BEGIN "
                f"INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text); END",
                f"CREATE TRIGGER {FTS}_update AFTER UPDATE OF search_text ON checkpoints_message BEGIN "
                f"INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text); "
                f"INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text); END",
                f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
            ],
            [
                f"DROP TRIGGER IF EXISTS {FTS}_insert",
                f"DROP TRIGGER IF EXISTS {FTS}_delete",
                f"DROP TRIGGER IF EXISTS {FTS}_update",
                f"DROP TABLE IF EXISTS {FTS}",
            ],
        ),
    ]
