"""Reading PostgreSQL query plans (EXPLAIN's JSON format) in the index tests."""

from __future__ import annotations

from typing import Any


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
