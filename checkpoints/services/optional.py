"""Optional arguments of a service: the ones a caller gave."""

from __future__ import annotations

from typing import Any


def not_none(**values: Any) -> dict[str, Any]:
    """The keyword arguments whose value is not None, in the order given."""
    return {name: value for name, value in values.items() if value is not None}
