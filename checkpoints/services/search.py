"""Message search: what is searchable, how text is normalised, what a query means, how each database runs it.

Semantics (the same on PostgreSQL and SQLite):

- The searchable text of a message is its `content` plus the `text` of each content block. JSON keys,
  roles, ids, tool calls and metadata are not text: searching `role` finds only messages that say "role".
- Text and query are normalised the same way: Unicode NFKC, full case folding, runs of whitespace collapsed.
  So matching ignores case in every script ("DÉCISION" finds "décision") but not accents ("decision" does
  not find "décision").
- The query is split into terms at whitespace; a "double-quoted phrase" is one term. A message matches when
  its text contains **every** term as a substring. Substrings, not words: Chinese and Japanese (no spaces
  between words) and Arabic are found like any other script, and "decis" finds "decision".

How it runs: the normalised text is stored once per message (`Message.search_text`, written by
`messages_append`), and each term is a `LIKE '%term%'` on it. PostgreSQL answers that from a GIN pg_trgm
index. SQLite answers terms of 3+ characters from an FTS5 table with the trigram tokenizer (kept in sync by
triggers, built by the first migration), and checks shorter terms, which trigrams cannot index, with the
same LIKE.

Why not tsvector: word matching (a parser, stemming) cannot be reproduced exactly in SQLite, and it misses
words inside unspaced scripts. For substring semantics a tsvector index cannot even narrow the candidates
("indécision" holds "décision" but not the lexeme), so it would cost writes and never be used.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, TypeVar

from django.db import connections
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from checkpoints.exceptions import ValidationFailed

MAX_QUERY_CHARS = 512
MAX_TERMS = 16
# The FTS5 trigram tokenizer matches nothing for shorter terms; they are checked with LIKE alone.
FTS_MIN_TERM_CHARS = 3
FTS_TABLE = "checkpoints_message_fts"

_Messages = TypeVar("_Messages", bound=QuerySet[Any])
_TERM = re.compile(r'"([^"]+)"|(\S+)')


def fold(text: str) -> str:
    """The normal form text is compared in: NFKC, case-folded (NFKC again: folding can denormalise),
    whitespace runs collapsed to one space."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


def message_search_text(content: str, content_blocks: Any) -> str:
    """What search sees of a message: content and the `text` of each content block, one per line (a term
    never spans two blocks)."""
    parts = [content]
    if isinstance(content_blocks, list):
        parts += [
            block["text"]
            for block in content_blocks
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
    return "\n".join(folded for folded in (fold(part) for part in parts) if folded)


def parse_search_query(raw: str) -> list[str]:
    """The normalised terms of a query (empty for a blank query); ValidationFailed if it is too long."""
    if len(raw) > MAX_QUERY_CHARS:
        raise ValidationFailed(f"search is longer than {MAX_QUERY_CHARS} characters.", {"search": raw[:64]})
    terms: list[str] = []
    for phrase, word in _TERM.findall(unicodedata.normalize("NFKC", raw)):
        term = fold(phrase or word)
        if term and term not in terms:
            terms.append(term)
    if len(terms) > MAX_TERMS:
        raise ValidationFailed(f"search has more than {MAX_TERMS} terms.", {"terms": len(terms)})
    return terms


def _fts_phrase(term: str) -> str:
    # An FTS5 string: double quotes doubled. Within a trigram table a phrase is a substring match.
    return '"' + term.replace('"', '""') + '"'


def messages_matching(queryset: _Messages, raw: str) -> _Messages:
    """Narrow a Message queryset to the messages whose text contains every term of `raw` (see module doc)."""
    terms = parse_search_query(raw)
    for term in terms:
        # Django escapes % _ and \ for `contains`; on PostgreSQL this is the pg_trgm-indexed LIKE.
        queryset = queryset.filter(search_text__contains=term)
    if connections[queryset.db].vendor == "sqlite":
        indexable = [term for term in terms if len(term) >= FTS_MIN_TERM_CHARS]
        if indexable:
            # Lets SQLite start from the FTS index instead of scanning every message; the LIKEs above
            # recheck the rows (exactly: both sides are already folded).
            match = " AND ".join(_fts_phrase(term) for term in indexable)
            queryset = queryset.filter(
                pk__in=RawSQL(f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", (match,))  # nosec B608 B611 # constant table, bound query
            )
    return queryset
