"""The medallion.v1 document: plain dataclasses, their validation, and the JSON Schema models write to.

Shared by the server and the SDK, so nothing here imports Django (only `checkpoints.integrity`, which is
Django-free too). Every `from_dict` refuses unknown keys and wrong types (a wrong type is never coerced) and
raises `SchemaError` naming the JSON path of the first problem, e.g. `$.decisions[2].confidence`.

A medallion has server-owned parts (`meta`: id, version, timestamps, status) and written parts: the scope
and the *content* (`summary`, `decisions`, `open_questions`, `affordances`) that a model or an agent writes.
`content_json_schema()` is the structured-output schema given to models; it only uses keywords that strict
structured-output implementations accept, and the limits it cannot express (lengths) are enforced by
`MedallionContent.from_dict` when the answer comes back.
"""

from __future__ import annotations

from checkpoints.medallion_schema.checks import (
    HIGH_LEVEL_MAX_CHARS,
    PRIORITIES,
    SCHEMA_VERSION,
    STATUSES,
    SUBSYSTEM_STATUSES,
    SchemaError,
    stable_id,
)
from checkpoints.medallion_schema.content import (
    CONTENT_FIELDS,
    Affordances,
    Decision,
    Evidence,
    MedallionContent,
    MedallionScope,
    OpenQuestion,
    Subsystem,
    Summary,
    normalise_scope_items,
)
from checkpoints.medallion_schema.document import Medallion, MedallionDraft, MedallionMeta, MedallionPatch
from checkpoints.medallion_schema.json_schema import content_json_schema, medallion_json_schema

__all__ = [
    "CONTENT_FIELDS",
    "HIGH_LEVEL_MAX_CHARS",
    "PRIORITIES",
    "SCHEMA_VERSION",
    "STATUSES",
    "SUBSYSTEM_STATUSES",
    "Affordances",
    "Decision",
    "Evidence",
    "Medallion",
    "MedallionContent",
    "MedallionDraft",
    "MedallionMeta",
    "MedallionPatch",
    "MedallionScope",
    "OpenQuestion",
    "SchemaError",
    "Subsystem",
    "Summary",
    "content_json_schema",
    "medallion_json_schema",
    "normalise_scope_items",
    "stable_id",
]
