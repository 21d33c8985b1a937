"""Text embeddings for search by meaning (docs/store.md, "Search by meaning"). `get_embedder()` returns the
configured one (settings `CAIRN_EMBEDDINGS`):

- `wordllama` (default): WordLlama's 256-dimension model, whose weights ship inside the `wordllama` package
  (loaded from there, never downloaded; CPU, no torch). Loaded once per process.
- `openai`: any OpenAI-compatible `/embeddings` endpoint (`BASE_URL`, `API_KEY`, `MODEL`).
- `none`: no server-side embedding; only vectors the client sends are searched.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from checkpoints.exceptions import Unavailable
from checkpoints.llm.endpoint import endpoint_arguments

EMBEDDERS = ("wordllama", "openai", "none")


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class WordLlamaEmbedder:
    name = "wordllama"

    def __init__(self) -> None:
        import wordllama  # the `embeddings` extra

        package = Path(wordllama.__file__).parent
        # The package directory holds `weights/` and `tokenizers/`: load from it, downloads disabled.
        self.model: Any = wordllama.WordLlama.load(cache_dir=package, disable_download=True)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in row] for row in self.model.embed(list(texts))]


class OpenAICompatibleEmbedder:
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_seconds: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/embeddings"
        self.api_key = api_key
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.transport = transport

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            with httpx.Client(timeout=self.timeout_seconds, transport=self.transport) as client:
                response = client.post(
                    self.url, json={"model": self.model, "input": list(texts)}, headers=headers
                )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda row: row["index"])
            vectors = [[float(x) for x in row["embedding"]] for row in data]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise Unavailable(f"The embeddings endpoint failed: {exc}") from exc
        if len(vectors) != len(texts):
            raise Unavailable("The embeddings endpoint answered a different number of vectors.")
        return vectors


@functools.cache
def _wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def get_embedder(name: str | None = None, **overrides: Any) -> Embedder | None:
    """The embedder named `name` (default: settings.CAIRN_EMBEDDINGS["PROVIDER"]); None for `none`."""
    config = {**settings.CAIRN_EMBEDDINGS, **overrides}
    name = name or config["PROVIDER"]
    if name == "none":
        return None
    if name == "wordllama":
        return _wordllama()
    if name == "openai":
        return OpenAICompatibleEmbedder(**endpoint_arguments(config))
    raise ImproperlyConfigured(
        f"CAIRN_EMBEDDINGS_PROVIDER must be one of {', '.join(EMBEDDERS)}, not {name!r}."
    )
