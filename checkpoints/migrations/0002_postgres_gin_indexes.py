"""GIN indexes for JSON filters on PostgreSQL (SQLite answers the same queries with json_each, unindexed)."""

from django.db import migrations

from checkpoints.migration_ops import VendorSQL


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0001_initial")]

    operations = [
        # Checkpoint metadata is stored as canonical text; containment filters cast it to jsonb.
        VendorSQL(
            "postgresql",
            "CREATE INDEX checkpoint_metadata_gin ON checkpoints_checkpoint "
            "USING gin (((metadata)::jsonb) jsonb_path_ops) WHERE metadata IS NOT NULL",
            "DROP INDEX IF EXISTS checkpoint_metadata_gin",
        ),
        VendorSQL(
            "postgresql",
            "CREATE INDEX thread_tags_gin ON checkpoints_thread USING gin (tags)",
            "DROP INDEX IF EXISTS thread_tags_gin",
        ),
        VendorSQL(
            "postgresql",
            "CREATE INDEX medallion_graph_nodes_gin ON checkpoints_medallion USING gin (graph_nodes)",
            "DROP INDEX IF EXISTS medallion_graph_nodes_gin",
        ),
        VendorSQL(
            "postgresql",
            "CREATE INDEX medallion_tags_gin ON checkpoints_medallion USING gin (tags)",
            "DROP INDEX IF EXISTS medallion_tags_gin",
        ),
    ]
