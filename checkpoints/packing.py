"""Storing a large document once per distinct part (docs/storage.md).

A checkpoint's state and context are canonical JSON text (`checkpoints.integrity`). A document shorter than
`PACK_MIN` characters is stored as it is. A longer one is stored *packed*: its canonical text with parts cut
out (the skeleton), each part stored once per workspace in the value table under the SHA-256 of its text.
The parts are:

- a value (string, number, object or list) of at least `VALUE_MIN` characters that is not itself cut up;
  objects and lists of `SPLIT` characters or more are cut up instead (each member, each run of elements).
  An object or list that is a member of an object is cut out only from `MEMBER_MIN` characters: small
  bookkeeping maps (LangGraph's `channel_versions`, `versions_seen`) change at every step, so as parts
  each would be a new row at every save, never shared. Below that, its own large values are still cut
  out (a message in a small map of channels), its lists element by element, not in runs;
- aligned runs of list elements: elements [0, 16), [16, 32)… and [0, 256), [256, 512)… and [0, 4096)…,
  each run taken as long as it is complete and its text stays under `RUN_MAX`. A list that only grows
  therefore shares every complete run with its previous version, and a checkpoint stores a few dozen
  references plus its newest few elements, not the whole list again.

The stored text of a packed document is `#` + the references (`<offset>:<digest>` joined by commas, the
offset a position in the skeleton, the digest in unpadded base64url) + a newline + the skeleton. A part's
digest is the first `DIGEST_BYTES` (16) bytes of the SHA-256 of its text: 22 characters a reference, where
the whole hash took 43, and a checkpoint names a dozen or more. Rows stored before 2026-12-02 name parts by
the whole hash; both lengths are read (`NAME_PATTERN`), and a part matches its digest when the SHA-256 of
its text starts with it (`matches`).
Canonical JSON never starts with `#`, so every stored text is either a whole document or a packed one.
`assemble` puts the parts back; packing checks that it gives back exactly the text it was given, so a
packed document always restores to the bytes that were hashed.

This module is pure (no Django): the value table and the reads that fill the parts in are in
`checkpoints.models.value`.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from checkpoints.integrity import canonical_json

MARK = "#"
PACK_MIN = 4096
SPLIT = 4096
VALUE_MIN = 128
MEMBER_MIN = 1024
RUN_LENGTHS = (4096, 256, 16)
RUN_MAX = 1 << 20


DIGEST_BYTES = 16
# A part's name in a header: its digest in unpadded base64url, 22 characters (16 bytes) or, in rows stored
# before 2026-12-02, 43 (the whole SHA-256). The restore's SQL reads headers with this too.
NAME_PATTERN = "[A-Za-z0-9_-]{22}(?:[A-Za-z0-9_-]{21})?"
_REFERENCE = re.compile(f"([0-9]{{1,9}}):({NAME_PATTERN})")


def digest_of(text: str) -> bytes:
    """The key of a part: the first DIGEST_BYTES bytes of the SHA-256 of its UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:DIGEST_BYTES]


def matches(digest: bytes, text: str) -> bool:
    """Whether `text` is the part `digest` names (of either length)."""
    return hashlib.sha256(text.encode("utf-8")).digest()[: len(digest)] == digest


def _name(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def digest_named(name: str) -> bytes:
    return base64.urlsafe_b64decode(name + "=" * (-len(name) % 4))


@dataclass(frozen=True)
class Packed:
    """A packed document: `stored` is what the column holds, `parts` the text of every part it names."""

    stored: str
    parts: dict[bytes, str]


def is_packed(stored: str | None) -> bool:
    return stored is not None and stored.startswith(MARK)


def _matches(stored: str) -> list[re.Match[str] | None]:
    end = stored.find("\n")
    return [_REFERENCE.fullmatch(item) for item in stored[1:end].split(",")] if end >= 0 else [None]


def references(stored: str) -> list[tuple[int, bytes]]:
    """The (skeleton offset, digest) of every part a packed text names, in order. DamagedHeader if the header
    is not a list of references (the row was altered by hand)."""
    matches = _matches(stored)
    if not all(matches):
        raise DamagedHeader("header")
    return [(int(match[1]), digest_named(match[2])) for match in matches if match]


def digests(stored: Iterable[str | None]) -> set[bytes]:
    """Every digest the packed texts among `stored` name (whole documents name none; of a damaged header, its
    well-formed references, so the collector keeps what they name)."""
    return {digest_named(match[2]) for text in stored if is_packed(text) for match in _matches(text) if match}  # type: ignore[arg-type]


class MissingPart(KeyError):
    """A packed document names a part that is not stored."""


class DamagedHeader(MissingPart):
    """A packed document's header does not name its parts in the stored format."""


def assemble(stored: str, parts: Mapping[bytes, str]) -> str:
    """The whole document: `stored` itself when not packed, else its skeleton with the parts put back.
    MissingPart if one of them is not in `parts` (DamagedHeader if they cannot be read)."""
    if not is_packed(stored):
        return stored
    named = references(stored)
    pieces, previous, start = [], 0, stored.index("\n") + 1
    for offset, digest in named:
        if digest not in parts:
            raise MissingPart(_name(digest))
        pieces += [stored[start + previous : start + offset], parts[digest]]
        previous = offset
    pieces.append(stored[start + previous :])
    return "".join(pieces)


def pack(value: Any, text: str, *, least: int = PACK_MIN) -> Packed | None:
    """`text` (the canonical encoding of `value`) packed, or None when it is stored whole (shorter than
    `least`, a scalar, or nothing worth cutting out). Pending writes are packed from `VALUE_MIN` on: a
    LangGraph step writes the message its next checkpoint holds, so the two name one part."""
    if len(text) < least or type(value) not in (dict, list):
        return None
    builder = _Builder()
    builder.container(value, text)
    if not builder.references:
        return None
    header = ",".join(f"{offset}:{_name(digest)}" for offset, digest in builder.references)
    packed = Packed(f"{MARK}{header}\n{''.join(builder.pieces)}", builder.parts)
    # The cut must give back the very bytes that were hashed; anything else is stored whole.
    return packed if assemble(packed.stored, packed.parts) == text else None


class _Builder:
    """Writes a skeleton piece by piece, cutting parts out as it goes.

    A container's pieces (an object's members, a list's runs and elements) are encoded one by one, except the
    largest by estimate: its text is what remains of the container's own text, already in hand. For a state
    dominated by one long list that saves encoding the document again.
    """

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.length = 0
        self.references: list[tuple[int, bytes]] = []
        self.parts: dict[bytes, str] = {}

    def keep(self, text: str) -> None:
        self.pieces.append(text)
        self.length += len(text)

    def cut(self, text: str) -> None:
        digest = digest_of(text)
        self.references.append((self.length, digest))
        self.parts[digest] = text

    def value(self, value: Any, text: str, *, least: int = VALUE_MIN) -> None:
        if len(text) >= SPLIT and type(value) in (dict, list):
            self.container(value, text)
        elif len(text) >= least:
            self.cut(text)
        else:
            self.keep(text)

    def member(self, value: Any, text: str) -> None:
        if type(value) in (dict, list) and VALUE_MIN <= len(text) < MEMBER_MIN:
            # A small map stays in the skeleton, but what is large inside it (the message a node was
            # handed) is cut out as anywhere else; its lists are not cut into runs.
            self.container(value, text, runs=False)
        else:
            self.value(value, text, least=MEMBER_MIN if type(value) in (dict, list) else VALUE_MIN)

    def container(self, value: dict[str, Any] | list[Any], text: str, *, runs: bool = True) -> None:
        if isinstance(value, dict):
            self.members(value, text)
        else:
            self.elements(value, text, runs=runs)

    def members(self, value: dict[str, Any], text: str) -> None:
        keys = sorted(value)
        prefixes = [canonical_json(key) + ":" for key in keys]
        members = [value[key] for key in keys]
        texts = _piece_texts(text, prefixes, [(member, False) for member in members])
        self.keep("{")
        for index, (prefix, member, member_text) in enumerate(zip(prefixes, members, texts, strict=True)):
            self.keep(("," if index else "") + prefix)
            self.member(member, member_text)
        self.keep("}")

    def elements(self, value: list[Any], text: str, *, runs: bool = True) -> None:
        plan = _list_plan(value, text) if runs else [(item, False) for item in value]
        texts = _piece_texts(text, [""] * len(plan), [(piece, is_run) for piece, is_run in plan])
        self.keep("[")
        for index, ((piece, is_run), piece_text) in enumerate(zip(plan, texts, strict=True)):
            if index:
                self.keep(",")
            if not is_run:
                self.value(piece, piece_text)
            elif len(piece_text) < VALUE_MIN:
                self.keep(piece_text)
            else:
                self.cut(piece_text)
        self.keep("]")


def _list_plan(items: list[Any], text: str) -> list[tuple[Any, bool]]:
    """A list's pieces in order: (the elements of a complete aligned run, True) or (an element, False).
    A run is taken when its text, judged by the list's average element, stays under RUN_MAX."""
    average = len(text) / max(len(items), 1)
    plan: list[tuple[Any, bool]] = []
    index = 0
    while index < len(items):
        for length in RUN_LENGTHS:
            if index % length == 0 and index + length <= len(items) and average * length <= RUN_MAX:
                plan.append((items[index : index + length], True))
                index += length
                break
        else:
            plan.append((items[index], False))
            index += 1
    return plan


def _piece_texts(text: str, prefixes: list[str], pieces: list[tuple[Any, bool]]) -> list[str]:
    """The canonical text of each piece of a container whose text is `text` (`{` or `[`, then the pieces with
    their prefixes joined by commas, then the closing bracket). A run's text is its elements' without the
    brackets. Every piece is encoded but the largest by estimate, which is cut out of `text`."""
    if not pieces:
        return []
    largest = max(range(len(pieces)), key=lambda index: _estimate(pieces[index][0]))
    texts = ["" if index == largest else _encode(*piece) for index, piece in enumerate(pieces)]
    inner = len(text) - 2
    known = sum(map(len, prefixes)) + sum(map(len, texts)) + len(pieces) - 1
    start = 1 + sum(len(prefixes[i]) + len(texts[i]) + 1 for i in range(largest)) + len(prefixes[largest])
    texts[largest] = text[start : start + inner - known]
    return texts


def _encode(piece: Any, is_run: bool) -> str:
    return canonical_json(piece)[1:-1] if is_run else canonical_json(piece)


def _estimate(piece: Any) -> int:
    """A cheap guess at a piece's size, to pick the one not to encode (any guess is correct, a good one is
    faster): a string's length, a container's length times a guess at its first member."""
    kind = type(piece)
    if kind is str:
        return len(piece)
    if kind is list and piece:
        return len(piece) * _estimate_shallow(piece[0])
    if kind is dict and piece:
        return len(piece) * _estimate_shallow(next(iter(piece.values())))
    return 1


def _estimate_shallow(item: Any) -> int:
    kind = type(item)
    if kind is str:
        return len(item) + 2
    if kind in (list, dict):
        return 16 * (len(item) + 1)
    return 8
