"""Fixtures of the medallion tests (shared with tests/api/test_medallions*.py through `fixtures`)."""

from tests.medallions.fixtures import eager, make_medallion

__all__ = ["eager", "make_medallion"]
