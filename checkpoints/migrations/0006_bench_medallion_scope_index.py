"""One GIN index over a medallion's whole scope (graph_nodes and tags together) instead of one per column,
found by `manage.py bench`.

A scope query tests both columns. With one GIN index per column the planner (which has no statistics for
jsonb containment) used one of them and checked the other condition on every row it fetched: a node shared
by 3,000 medallions of a 1M-row table meant 3,000 heap pages for 99 answers (9.5 ms). The two-column index
intersects both conditions inside the index, so only matching rows are read (0.7 ms). A condition on either
column alone uses it just as well (a multicolumn GIN index searches any subset of its columns equally), so
the single-column indexes of 0002 are replaced, not kept beside it.
"""

from django.db import migrations

from checkpoints.migration_ops import VendorSQL


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0005_workspace_tombstone_retention_optional")]

    operations = [
        VendorSQL(
            "postgresql",
            [
                "CREATE INDEX medallion_scope_gin ON checkpoints_medallion USING gin (graph_nodes, tags)",
                "DROP INDEX IF EXISTS medallion_graph_nodes_gin",
                "DROP INDEX IF EXISTS medallion_tags_gin",
            ],
            [
                "CREATE INDEX medallion_graph_nodes_gin ON checkpoints_medallion USING gin (graph_nodes)",
                "CREATE INDEX medallion_tags_gin ON checkpoints_medallion USING gin (tags)",
                "DROP INDEX IF EXISTS medallion_scope_gin",
            ],
        ),
    ]
