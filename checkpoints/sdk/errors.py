"""The SDK's exceptions: one class per error code of the API (docs/api/index.md), all under `CairnError`.

The server's envelope `{"error": {"code", "message", "details"}}` becomes the exception; the class is
chosen by `code` (never by status alone, since 409 has three meanings). Client-side failures use the same
classes: a restore whose record does not hash to its checksum raises `ChecksumMismatch` before any value is
returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from checkpoints.sdk.retry import retry_after_seconds

if TYPE_CHECKING:
    from checkpoints.sdk.models import Checkpoint


class CairnError(Exception):
    """Base class. `code`, `status` (0 when raised client-side), `message`, `details` (the envelope's)."""

    code: ClassVar[str] = "error"
    status_code: ClassVar[int] = 0

    def __init_subclass__(
        cls, code: str | None = None, status_code: int | None = None, **kwargs: Any
    ) -> None:
        """`class NotFound(CairnError, code="not_found", status_code=404)`: the error code and HTTP status a
        subclass stands for (inherited when not given)."""
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
        if status_code is not None:
            cls.status_code = status_code

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        status: int | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}
        self.status = self.status_code if status is None else status
        self.error_code = code or self.code
        self.headers: dict[str, str] = headers or {}

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked to wait before trying again (its Retry-After), if it said."""
        return retry_after_seconds(self.headers.get("retry-after", self.details.get("retry_after")))

    def __str__(self) -> str:
        prefix = f"[{self.status} {self.error_code}] " if self.status else f"[{self.error_code}] "
        return prefix + self.message


class ValidationError(CairnError, code="validation_error", status_code=400):
    pass


class NotAuthenticated(CairnError, code="not_authenticated", status_code=401):
    pass


class PermissionDenied(CairnError, code="permission_denied", status_code=403):
    pass


class NotFound(CairnError, code="not_found", status_code=404):
    pass


class Conflict(CairnError, code="conflict", status_code=409):
    pass


class ChecksumMismatch(CairnError, code="checksum_mismatch", status_code=409):
    """The stored record does not hash to its checksum (detected by the server, or by the SDK on restore)."""


class AmbiguousId(CairnError, code="ambiguous_id", status_code=409):
    pass


class Gone(CairnError, code="gone", status_code=410):
    """The checkpoint expired. `tombstone` is what is left of it (ids, parent, checksum, times), if sent."""

    @property
    def tombstone(self) -> Checkpoint | None:
        from checkpoints.sdk.models import Checkpoint

        data = self.details.get("checkpoint")
        return Checkpoint.from_dict(data) if isinstance(data, dict) else None


class PreconditionFailed(CairnError, code="precondition_failed", status_code=412):
    pass


class PayloadTooLarge(CairnError, code="payload_too_large", status_code=413):
    pass


class DiffTooLarge(CairnError, code="diff_too_large", status_code=422):
    """A diff of two checkpoints holding more JSON values together than the server compares;
    `details["limit"]` is that number (the server's CAIRN_DIFF_MAX_NODES). Restore both and compare here."""


class Throttled(CairnError, code="throttled", status_code=429):
    """Over the key's rate. `retry_after` is the number of seconds the server asked to wait."""


class Unavailable(CairnError, code="unavailable", status_code=503):
    """The server (or its database or broker) is unavailable: retry later."""


class CairnConnectionError(Unavailable, code="connection_error", status_code=0):
    """The server could not be reached, or the connection failed mid-request (after the retries allowed)."""


class JobFailed(CairnError, code="job_failed"):
    """A background job the SDK waited for finished as `failed`; `details["job"]` holds it."""


ERRORS_BY_CODE: dict[str, type[CairnError]] = {
    cls.code: cls
    for cls in (
        ValidationError,
        NotAuthenticated,
        PermissionDenied,
        NotFound,
        Conflict,
        ChecksumMismatch,
        AmbiguousId,
        Gone,
        PreconditionFailed,
        PayloadTooLarge,
        DiffTooLarge,
        Throttled,
        Unavailable,
    )
}

_ERRORS_BY_STATUS: dict[int, type[CairnError]] = {
    400: ValidationError,
    401: NotAuthenticated,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    410: Gone,
    412: PreconditionFailed,
    413: PayloadTooLarge,
    429: Throttled,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def error_from_response(status: int, body: Any, headers: dict[str, str]) -> CairnError:
    """The exception for an error response: by the envelope's code, else (a proxy's page) by status."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code = error["code"]
        message = str(error.get("message") or code)
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
        cls = ERRORS_BY_CODE.get(code) or _ERRORS_BY_STATUS.get(status, CairnError)
        return cls(message, details=details, status=status, code=code, headers=headers)
    cls = _ERRORS_BY_STATUS.get(status, CairnError)
    return cls(f"HTTP {status} without an error envelope.", status=status, headers=headers)
