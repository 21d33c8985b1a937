"""medallion's exceptions by name; `SchemaValidationError` is also Cairn's `SchemaError` (a ValueError, as a
pydantic validation error is)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from checkpoints.medallion_schema import SchemaError
from checkpoints.sdk.errors import CairnError, ValidationError


class MedallionError(Exception):
    """Base exception for medallion operations."""


class SchemaValidationError(MedallionError, SchemaError):
    """A medallion does not follow medallion.v1 (`path` names the first offending value)."""


class StoreError(MedallionError):
    """The store (the Cairn server) refused or failed an operation; the Cairn error is the `__cause__`."""


class LLMError(MedallionError):
    """The medallion LLM failed or answered something that is not a medallion."""


@contextmanager
def store_errors() -> Iterator[None]:
    """Re-raise Cairn's errors as the store's: a refused document is a SchemaValidationError."""
    try:
        yield
    except MedallionError:
        raise
    except ValidationError as exc:
        raise SchemaValidationError(str(exc.details.get("path", "$")), exc.message) from exc
    except CairnError as exc:
        raise StoreError(str(exc)) from exc
