"""checkpnt's exceptions by name, each also the Cairn error it stands for: `except CheckpointNotFoundError`
(checkpnt) and `except NotFound` (Cairn) both catch an unknown id."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from checkpoints.sdk.errors import (
    AmbiguousId,
    CairnConnectionError,
    CairnError,
    ChecksumMismatch,
    Conflict,
    Gone,
    NotFound,
)


class CheckpntError(CairnError):
    """Base class for every checkpnt error."""


class _ForCheckpoint(CheckpntError):
    """An error about one checkpoint: `checkpoint_id`, and the Cairn error's details when it came from one."""

    def __init__(self, checkpoint_id: str, message: str, cause: CairnError | None = None) -> None:
        super().__init__(
            message,
            details=cause.details if cause is not None else None,
            status=cause.status if cause is not None else None,
            headers=cause.headers if cause is not None else None,
        )
        self.checkpoint_id = checkpoint_id


class CheckpointNotFoundError(_ForCheckpoint, NotFound):
    """The checkpoint id does not exist."""

    def __init__(self, checkpoint_id: str, cause: CairnError | None = None) -> None:
        super().__init__(checkpoint_id, f"Checkpoint not found: {checkpoint_id}", cause)


class CheckpointExpiredError(CheckpointNotFoundError, Gone):
    """The checkpoint expired: not found for checkpnt, `Gone` (with its `.tombstone`) for Cairn."""

    def __init__(self, checkpoint_id: str, cause: CairnError | None = None) -> None:
        _ForCheckpoint.__init__(self, checkpoint_id, f"Checkpoint expired: {checkpoint_id}", cause)


class CheckpointConflictError(_ForCheckpoint, Conflict):
    """A checkpoint with this id already exists with other contents (checkpoints are immutable)."""

    def __init__(self, checkpoint_id: str, cause: CairnError | None = None) -> None:
        super().__init__(
            checkpoint_id,
            f"Checkpoint '{checkpoint_id}' already exists. Checkpoints are immutable: save a new one.",
            cause,
        )


class CheckpointIntegrityError(_ForCheckpoint, ChecksumMismatch):
    """The checkpoint does not hash to its checksum."""

    def __init__(self, checkpoint_id: str, cause: CairnError | None = None) -> None:
        super().__init__(
            checkpoint_id,
            f"Integrity check failed for checkpoint '{checkpoint_id}'. The stored payload may have been "
            "tampered with.",
            cause,
        )


class SchemaMigrationError(CheckpntError):
    """No migration path exists from a checkpoint's schema version."""


class BackendConnectionError(CheckpntError, CairnConnectionError):
    """The Cairn server cannot be reached."""


class AdapterError(CheckpntError):
    """A framework adapter failed to extract or reconstruct state."""


@contextmanager
def checkpnt_errors(checkpoint_id: str | None = None) -> Iterator[None]:
    """Re-raise Cairn's errors as checkpnt's (the original is the `__cause__`)."""
    try:
        yield
    except CheckpntError:
        raise
    except CairnConnectionError as exc:
        raise BackendConnectionError(exc.message) from exc
    except (Gone, NotFound, ChecksumMismatch) as exc:
        if checkpoint_id is None:
            raise
        error: type[CheckpointNotFoundError] | type[CheckpointIntegrityError] = (
            CheckpointExpiredError
            if isinstance(exc, Gone)
            else CheckpointNotFoundError
            if isinstance(exc, NotFound)
            else CheckpointIntegrityError
        )
        raise error(checkpoint_id, exc) from exc
    except Conflict as exc:
        if checkpoint_id is None or isinstance(exc, AmbiguousId) or exc.error_code != Conflict.code:
            raise
        raise CheckpointConflictError(checkpoint_id, exc) from exc


def unsupported_backend(name: str, call: str, owner: str = "Client") -> CheckpntError:
    """The error for checkpnt's local backends: Cairn is the backend, and this is the line to change."""
    return CheckpntError(
        f"checkpnt's {name} backend is not part of Cairn: checkpoints live on the Cairn server. Replace "
        f"`{call}` with `{owner}.from_env()` (CAIRN_URL, CAIRN_API_KEY) or `{owner}(base_url, api_key)`."
    )


__all__ = [
    "AdapterError",
    "BackendConnectionError",
    "CheckpntError",
    "CheckpointConflictError",
    "CheckpointExpiredError",
    "CheckpointIntegrityError",
    "CheckpointNotFoundError",
    "SchemaMigrationError",
]
