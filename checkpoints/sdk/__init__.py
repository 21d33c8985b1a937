"""The Cairn Python SDK. Imports nothing from Django: agents install the package and import only this.

    from checkpoints.sdk import Client, AsyncClient, CairnError, NotFound, Gone

Integrations: `checkpoints.sdk.langgraph` (CairnSaver / AsyncCairnSaver), `checkpoints.sdk.checkpnt`,
`checkpoints.sdk.medallion`, `checkpoints.sdk.pyagenity`, `checkpoints.sdk.agent_checkpoint`.
"""

from __future__ import annotations

from checkpoints.integrity import canonical_json, record_checksum
from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.client import Client
from checkpoints.sdk.errors import (
    AmbiguousId,
    CairnConnectionError,
    CairnError,
    ChecksumMismatch,
    Conflict,
    DiffTooLarge,
    Gone,
    JobFailed,
    NotAuthenticated,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    PreconditionFailed,
    Throttled,
    Unavailable,
    ValidationError,
)
from checkpoints.sdk.jsonvalue import NotJSONError, to_json
from checkpoints.sdk.models import (
    UNSET,
    Annotation,
    Checkpoint,
    Diff,
    Job,
    Message,
    Page,
    PendingWrite,
    SaveResult,
    Thread,
)
from checkpoints.sdk.retry import RetryPolicy
from checkpoints.sdk.transport import SDK_VERSION

__version__ = SDK_VERSION

__all__ = [
    "UNSET",
    "AmbiguousId",
    "Annotation",
    "AsyncClient",
    "CairnConnectionError",
    "CairnError",
    "Checkpoint",
    "ChecksumMismatch",
    "Client",
    "Conflict",
    "Diff",
    "DiffTooLarge",
    "Gone",
    "Job",
    "JobFailed",
    "Message",
    "NotAuthenticated",
    "NotFound",
    "NotJSONError",
    "Page",
    "PayloadTooLarge",
    "PendingWrite",
    "PermissionDenied",
    "PreconditionFailed",
    "RetryPolicy",
    "SaveResult",
    "Thread",
    "Throttled",
    "Unavailable",
    "ValidationError",
    "canonical_json",
    "record_checksum",
    "to_json",
]
