"""The small set of domain errors services raise. `checkpoints.api.errors` maps them to the error envelope."""

from __future__ import annotations

from typing import Any, ClassVar


class CairnError(Exception):
    """Base class: a machine-readable code, an HTTP status, a human message and optional details."""

    code: ClassVar[str] = "error"
    status: ClassVar[int] = 400

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class ValidationFailed(CairnError):
    code = "validation_error"
    status = 400


class NotFound(CairnError):
    code = "not_found"
    status = 404


class Conflict(CairnError):
    code = "conflict"
    status = 409


class ChecksumMismatch(CairnError):
    code = "checksum_mismatch"
    status = 409


class AmbiguousId(CairnError):
    code = "ambiguous_id"
    status = 409


class Gone(CairnError):
    code = "gone"
    status = 410


class PreconditionFailed(CairnError):
    code = "precondition_failed"
    status = 412


class PayloadTooLarge(CairnError):
    code = "payload_too_large"
    status = 413


class DiffTooLarge(CairnError):
    code = "diff_too_large"
    status = 422


class Unavailable(CairnError):
    code = "unavailable"
    status = 503
