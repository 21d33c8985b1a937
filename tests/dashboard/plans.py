"""Reading PostgreSQL query plans (EXPLAIN's JSON format) in the index tests, and the threads they load
their rows into."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from checkpoints.models import Thread, Workspace
from tests.factories import WorkspaceFactory


def plan_nodes(document: Any) -> list[dict[str, Any]]:
    """Every node of a JSON plan, at any depth."""
    if isinstance(document, list):
        return [node for item in document for node in plan_nodes(item)]
    if isinstance(document, dict):
        found = [document] if "Node Type" in document else []
        for value in document.values():
            found += plan_nodes(value)
        return found
    return []


def threads_in_three_workspaces(workspace: Workspace, count: int) -> Iterator[tuple[int, Thread]]:
    """`count` new threads t-0, t-1... in `workspace`, then as many of the same ids in two new workspaces
    (w2, w3), each with its number: a plan that reads one workspace's rows must filter the others out."""
    for slug in (workspace.slug, "w2", "w3"):
        ws = workspace if slug == workspace.slug else WorkspaceFactory.create(slug=slug)
        for t in range(count):
            yield t, Thread.objects.create(workspace=ws, thread_id=f"t-{t}")
