"""The provider protocol every summariser implements, and the errors providers raise."""

from __future__ import annotations

from typing import Protocol

from checkpoints.medallion_schema import Evidence, Medallion, MedallionContent, MedallionScope


class LLMError(Exception):
    """A provider could not produce a valid medallion. The message says why (it becomes the job's error)."""


class LLMOutputInvalid(LLMError):
    """The model answered, but never with a valid medallion (malformed JSON, schema violations, refusals)."""


class LLMUnavailable(LLMError):
    """The model endpoint kept failing (timeouts, connection errors, HTTP 429/5xx) through every attempt."""


class LLMRequestRefused(LLMError):
    """The endpoint refused the request itself (HTTP 4xx other than 429): a configuration problem that
    retrying cannot fix (wrong key, unknown model, unsupported response_format)."""


class MedallionProvider(Protocol):
    """Writes medallion content. Implementations are the only code that talks to a model.

    `generate` writes a first medallion for a scope; `update` merges new evidence into an existing one
    (the result replaces its content, so whatever should survive must be carried over).
    """

    @property
    def model(self) -> str:
        """The label stored on the medallion and its revision (e.g. `gpt-4o-mini`, `cairn-extractive-1`)."""
        ...

    def generate(self, scope: MedallionScope, evidence: Evidence) -> MedallionContent: ...

    def update(self, existing: Medallion, evidence: Evidence) -> MedallionContent: ...
