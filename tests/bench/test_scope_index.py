"""The medallion scope query is answered inside one GIN index over graph_nodes and tags together (migration
0006): both conditions are Index Conds, so only matching rows are fetched, however many medallions share one
of the requested nodes; and a condition on one column alone uses the same index."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection

from checkpoints import medallion_schema as schema
from checkpoints.models import Medallion, Workspace
from checkpoints.services.medallion_reads import medallions_for_scope

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_a_scope_query_uses_the_two_column_index_for_both_conditions(workspace: Workspace) -> None:
    Medallion.objects.bulk_create(
        Medallion(
            workspace=workspace,
            graph_nodes=sorted({"repo:shared", f"node-{n % 7}"}),
            tags=[f"tag-{n % 13}"],
            scope_key=hashlib.sha256(str(n).encode()).hexdigest(),
            high_level=f"medallion {n}",
        )
        for n in range(2000)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE checkpoints_medallion")
        # A 2,000-row table is cheapest read whole; at 1M rows the planner picks this index unasked (bench).
        cursor.execute("SET LOCAL enable_seqscan = off")
    # Each condition alone matches hundreds of rows; both together, a few dozen.
    both = Medallion.objects.matching_scope(["node-5"], ["tag-3"])
    plan = both.explain()
    assert "medallion_scope_gin" in plan, plan
    index_cond = plan.split("Index Cond:")[-1]
    assert "graph_nodes @>" in index_cond and "tags ?|" in index_cond, plan
    scope = schema.MedallionScope.from_dict({"graph_nodes": ["node-5"], "tags": ["tag-3"]}, "$")
    found = medallions_for_scope(workspace=workspace, scope=scope)
    assert len(found[:500]) == sum(1 for n in range(2000) if n % 13 == 3 and n % 7 == 5)
    for nodes, tags in ((["node-5"], []), ([], ["tag-3"])):
        assert "medallion_scope_gin" in Medallion.objects.matching_scope(nodes, tags).explain()
