"""What an OpenAI-compatible endpoint, chat or embeddings, is built from: the four settings CAIRN_LLM and
CAIRN_EMBEDDINGS share (project/settings.py, docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict


class EndpointArguments(TypedDict):
    base_url: str
    api_key: str
    model: str
    timeout_seconds: float


def endpoint_arguments(config: Mapping[str, Any]) -> EndpointArguments:
    """The keyword arguments of an OpenAI-compatible provider or embedder, from its settings dict."""
    return EndpointArguments(
        base_url=config["BASE_URL"],
        api_key=config["API_KEY"],
        model=config["MODEL"],
        timeout_seconds=float(config["TIMEOUT_SECONDS"]),
    )
