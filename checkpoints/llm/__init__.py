"""The only code in Cairn that talks to a model. `get_provider()` returns the configured provider
(settings `CAIRN_LLM`): `extractive` (default, offline, deterministic) or `openai` (any OpenAI-compatible
chat-completions endpoint)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from checkpoints.llm.base import (
    LLMError,
    LLMOutputInvalid,
    LLMRequestRefused,
    LLMUnavailable,
    MedallionProvider,
)
from checkpoints.llm.endpoint import endpoint_arguments
from checkpoints.llm.extractive import ExtractiveProvider
from checkpoints.llm.openai_compatible import OpenAICompatibleProvider

PROVIDERS = ("extractive", "openai")


def get_provider(name: str | None = None, **overrides: Any) -> MedallionProvider:
    """The provider named `name` (default: settings.CAIRN_LLM["PROVIDER"]), configured from settings."""
    config = {**settings.CAIRN_LLM, **overrides}
    name = name or config["PROVIDER"]
    if name == "extractive":
        return ExtractiveProvider()
    if name == "openai":
        return OpenAICompatibleProvider(
            **endpoint_arguments(config),
            max_attempts=int(config["MAX_ATTEMPTS"]),
            backoff_seconds=float(config.get("BACKOFF_SECONDS", 1.0)),
        )
    raise ImproperlyConfigured(f"CAIRN_LLM_PROVIDER must be one of {', '.join(PROVIDERS)}, not {name!r}.")


__all__ = [
    "PROVIDERS",
    "ExtractiveProvider",
    "LLMError",
    "LLMOutputInvalid",
    "LLMRequestRefused",
    "LLMUnavailable",
    "MedallionProvider",
    "OpenAICompatibleProvider",
    "get_provider",
]
