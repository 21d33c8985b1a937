"""Fewer bytes per save (docs/storage.md, "Indexes"; figures in docs/performance.md):

- The thread row is rewritten by every save (`updated_at`, `expires_at`, `state_version`). Two indexes held
  `updated_at`, so no such update could be HOT: each left a dead row version and a new entry in every thread
  index, the trigram GIN ones included. They go; a user's threads are found by (workspace, user_id), and
  the lists ordered by `updated_at` sort that set (or the workspace's) instead of reading an index.
- `checkpoint_ws_writer` goes: `?written_by=` (a provenance question) walks `checkpoint_ws_timeline`.
- The checkpoint GIN indexes take their entries at once (`fastupdate` off): without vacuum their pending
  lists grew by every save up to 4 MB each, and the save that crossed the limit merged the whole list.
- A fill factor of 70 on the thread table leaves room on each page for the new version of a row, which
  a HOT update needs (PostgreSQL only).
- The large text columns compress with lz4 where the server has it (PostgreSQL 14+ built with lz4;
  otherwise pglz stays): new values only, old ones stay as written.
"""

from django.db import migrations, models

from checkpoints.migration_ops import VendorSQL

GIN_INDEXES = ("checkpoint_metadata_gin", "checkpoint_step_name_trgm")
LZ4_COLUMNS = (
    ("checkpoints_checkpoint", "state"),
    ("checkpoints_checkpoint", "context"),
    ("checkpoints_checkpoint", "metadata"),
    ("checkpoints_storedvalue", "body"),
    ("checkpoints_pendingwrite", "value"),
)


def _compression(method: str) -> str:
    statements = " ".join(
        f"EXECUTE 'ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}';"
        for table, column in LZ4_COLUMNS
    )
    # A server built without lz4 refuses the method: keep its default then.
    return (
        f"DO $$ BEGIN {statements} "
        "EXCEPTION WHEN feature_not_supported THEN RAISE NOTICE 'lz4 is not available; pglz kept'; END $$"
    )


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0015_medallion_vectors")]

    operations = [
        migrations.RemoveIndex(model_name="thread", name="thread_ws_updated"),
        migrations.RemoveIndex(model_name="thread", name="thread_ws_user_updated"),
        migrations.AddIndex(
            model_name="thread",
            index=models.Index(fields=["workspace", "user_id"], name="thread_ws_user"),
        ),
        migrations.RemoveIndex(model_name="checkpoint", name="checkpoint_ws_writer"),
        VendorSQL(
            "postgresql",
            # The entries already pending go into the index proper first.
            [f"SELECT gin_clean_pending_list('{index}')" for index in GIN_INDEXES]
            + [f"ALTER INDEX {index} SET (fastupdate = off)" for index in GIN_INDEXES],
            [f"ALTER INDEX {index} RESET (fastupdate)" for index in GIN_INDEXES],
        ),
        VendorSQL(
            "postgresql",
            "ALTER TABLE checkpoints_thread SET (fillfactor = 70)",
            "ALTER TABLE checkpoints_thread RESET (fillfactor)",
        ),
        VendorSQL("postgresql", _compression("lz4"), _compression("pglz")),
    ]
