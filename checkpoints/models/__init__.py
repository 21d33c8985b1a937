"""Cairn's models, one module per aggregate. Importing this package registers the JSON lookups."""

from checkpoints.models import lookups as _lookups  # noqa: F401  (registers lookups)
from checkpoints.models.annotation import Annotation
from checkpoints.models.audit import AuditEvent, AuditEventAgent
from checkpoints.models.checkpoint import Checkpoint, PendingWrite
from checkpoints.models.job import Job
from checkpoints.models.medallion import Medallion, MedallionRevision
from checkpoints.models.store import StoreItem
from checkpoints.models.thread import Message, Thread
from checkpoints.models.value import StoredValue
from checkpoints.models.workspace import ApiKey, Membership, Workspace

__all__ = [
    "Annotation",
    "ApiKey",
    "AuditEvent",
    "AuditEventAgent",
    "Checkpoint",
    "Job",
    "Medallion",
    "MedallionRevision",
    "Membership",
    "Message",
    "PendingWrite",
    "StoreItem",
    "StoredValue",
    "Thread",
    "Workspace",
]
