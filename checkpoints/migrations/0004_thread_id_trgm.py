"""A trigram index on thread ids, next to the one on names: the dashboard's text filter matches either
(`UPPER(thread_id) LIKE ... OR UPPER(name) LIKE ...`), and PostgreSQL can only answer an OR from indexes when
both sides have one (a BitmapOr); with one side unindexed it scans the table."""

from django.db import migrations

from checkpoints.migration_ops import VendorSQL


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0003_threads_message_search")]

    operations = [
        VendorSQL(
            "postgresql",
            "CREATE INDEX thread_id_trgm ON checkpoints_thread USING gin ((upper((thread_id)::text)) gin_trgm_ops)",
            "DROP INDEX IF EXISTS thread_id_trgm",
        ),
    ]
