"""Finding near-duplicates among many sets of words without comparing every pair.

The extractive summariser asks "is this decision a restatement of one already kept?" and "was this question
already asked?" for every sentence of the evidence. Comparing each with all the earlier ones is quadratic;
`SimilarSets` uses prefix filtering instead (Bayardo et al., "Scaling up all pairs similarity search";
Xiao et al., "Efficient similarity joins for near duplicate detection"). Every word is ranked by how rare it
is, and each set is indexed under its few rarest words: two sets whose Jaccard similarity reaches t share at
least t x (the larger size) words, so by the pigeonhole principle each one's first |set| - ceil(t x |set|) + 1
words in that order hold a common word. A lookup visits only the sets indexed under its own prefix, skips
those that, from where the shared word sits in each, cannot share enough words, and verifies the rest: its
answers are exactly those of the pairwise comparison.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

# Keeps bounds computed in floating point (t x size) from rounding up past the integer they stand for.
_TOLERANCE = 1e-9


def rarest_first(sets: Iterable[Iterable[str]]) -> dict[str, int]:
    """Every word's rank in the order prefix filtering uses: fewest sets first, ties by the word itself."""
    frequency = Counter(word for words in sets for word in set(words))
    return {word: rank for rank, word in enumerate(sorted(frequency, key=lambda w: (frequency[w], w)))}


class SimilarSets:
    """Sets added one by one, and a lookup of those whose Jaccard similarity with a given set is above
    `threshold` (or equal to it too, with `inclusive`), as `text.jaccard` computes it. Words without a
    rank (not seen by `rarest_first`) come first: any fixed order is correct, rare-first is only faster."""

    def __init__(self, ranks: Mapping[str, int], threshold: float, *, inclusive: bool) -> None:
        self._ranks = ranks
        self._threshold = threshold
        self._inclusive = inclusive
        self._sets: list[frozenset[str]] = []
        # word -> (size of the set, how many of its words come after this one) -> the sets, for every word
        # of every prefix: a lookup skips whole groups that cannot share enough words.
        self._postings: defaultdict[str, defaultdict[tuple[int, int], list[int]]] = defaultdict(
            lambda: defaultdict(list)
        )

    def _prefix(self, words: frozenset[str]) -> list[str]:
        ordered = sorted(words, key=lambda w: (self._ranks.get(w, -1), w))
        shared = math.ceil(self._threshold * len(ordered) - _TOLERANCE)
        return ordered[: len(ordered) - shared + 1]

    def add(self, words: frozenset[str]) -> int:
        """Index a set; returns its number (0, 1, ... in the order of adding)."""
        number = len(self._sets)
        self._sets.append(words)
        for position, word in enumerate(self._prefix(words)):
            self._postings[word][len(words), len(words) - position - 1].append(number)
        return number

    def similar(self, words: frozenset[str]) -> list[int]:
        """The numbers of the added sets similar to `words`, in the order they were added."""
        size = len(words)
        candidates: set[int] = set()
        for position, word in enumerate(self._prefix(words)):
            after = size - position - 1
            for (other_size, other_after), numbers in self._postings.get(word, {}).items():
                # Met first at this word (every word ranked before it would be in both prefixes), a set
                # shares at most this word and as many as follow it in the shorter remainder.
                if 1 + min(after, other_after) >= self._needed(size, other_size):
                    candidates.update(numbers)
        return sorted(number for number in candidates if self._passes(words, self._sets[number]))

    def _needed(self, size: int, other_size: int) -> int:
        """Fewest shared words for the threshold: |a & b| / (|a| + |b| - |a & b|) >= t."""
        return math.ceil(self._threshold * (size + other_size) / (1 + self._threshold) - _TOLERANCE)

    def _passes(self, left: frozenset[str], right: frozenset[str]) -> bool:
        shared = len(left & right)
        similarity = shared / (len(left) + len(right) - shared)  # == len(left & right) / len(left | right)
        return similarity >= self._threshold if self._inclusive else similarity > self._threshold
