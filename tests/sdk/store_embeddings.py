"""A deterministic fake embedding for search-by-meaning tests, the kind LangGraph's store tests use: a text is
the normalised, frequency-weighted sum of one fixed pseudo-random vector per character, so texts sharing
more characters are closer."""

from __future__ import annotations

import math
import random
from collections import Counter
from functools import cache

from langchain_core.embeddings import Embeddings


class CharacterEmbeddings(Embeddings):
    def __init__(self, dims: int = 64) -> None:
        self.dims = dims

    @cache  # noqa: B019  (a handful of instances per test run)
    def _direction(self, char: str) -> tuple[float, ...]:
        rng = random.Random(f"{self.dims}:{char}")
        return tuple(rng.gauss(0.0, 1.0) for _ in range(self.dims))

    def _embed(self, text: str) -> list[float]:
        counts = Counter(text)
        vector = [0.0] * self.dims
        for char, count in counts.items():
            for i, component in enumerate(self._direction(char)):
                vector[i] += component * count / len(text)
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)
