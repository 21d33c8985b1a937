"""The dashboard's checkpoint search by step name (`step_name icontains`, the SQL of which is
`UPPER(step_name::text) LIKE UPPER('%term%')`): a trigram index on that expression, as 0003 does for thread
names, so PostgreSQL answers it without scanning the checkpoint table. Message text keeps the index of 0003,
agents the `checkpoint_ws_agent` index and metadata the `checkpoint_metadata_gin` index of 0002. SQLite
answers the same LIKE unindexed, within the workspace."""

from django.db import migrations

from checkpoints.migration_ops import VendorSQL


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0007_foreign_keys_indexed_by_composites")]

    operations = [
        VendorSQL(
            "postgresql",
            "CREATE INDEX checkpoint_step_name_trgm ON checkpoints_checkpoint "
            "USING gin ((upper((step_name)::text)) gin_trgm_ops) WHERE step_name IS NOT NULL",
            "DROP INDEX IF EXISTS checkpoint_step_name_trgm",
        ),
    ]
