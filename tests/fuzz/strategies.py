"""Hypothesis strategies for JSON documents and checkpoint records, including the awkward corners: integers
past 64 bits, -0.0, subnormal and huge floats, every Unicode plane (astral characters, NUL, controls), keys
that differ only by normalisation, deep and wide nesting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

# Valid text: every code point but lone surrogates (which no UTF-8 text can hold).
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=24)
keys = st.one_of(text, st.sampled_from(["é", "é", "a", "A", "", " ", "\x00", "\U0001d518", '"', "\\", "[{"]))
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e16, 1e-7, 5e-324, 1.7976931348623157e308, 0.1]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, text)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=5)),
    max_leaves=30,
)
json_objects = st.dictionaries(keys, json_values, max_size=6)
ids = st.from_regex(r"\A[A-Za-z0-9._:-]{1,32}\Z")
optional_names = st.one_of(
    st.none(), st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=16)
)
offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Any instant from 1970 to 9998 with microseconds, spelled in any UTC offset.
timestamps = st.builds(
    lambda seconds, micros, tz: (EPOCH + timedelta(seconds=seconds, microseconds=micros)).astimezone(tz),
    st.integers(min_value=0, max_value=252_000_000_000),
    st.integers(min_value=0, max_value=999_999),
    offsets,
)


@st.composite
def records(draw: Any, metadata: Any = json_objects) -> dict[str, Any]:
    """A whole checkpoint record as a client holds it (created_at may be in any time zone)."""
    return {
        "thread_id": draw(ids),
        "namespace": draw(st.text(st.characters(exclude_categories=["Cs"]), max_size=12)),
        "checkpoint_id": draw(ids),
        "parent_id": draw(st.one_of(st.none(), ids)),
        "agent_id": draw(st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=16)),
        "framework": draw(st.sampled_from(["langgraph", "crewai", "autogen", "custom"])),
        "schema_version": draw(st.text(min_size=1, max_size=8)),
        "step_index": draw(st.integers(min_value=-(2**63), max_value=2**63 - 1)),
        "step_name": draw(optional_names),
        "run_id": draw(optional_names),
        "state": draw(json_values),
        "context": draw(json_objects),
        "metadata": draw(metadata),
        "handoff_target": draw(optional_names),
        "handoff_from": draw(optional_names),
        "created_at": draw(timestamps),
    }


def depth(value: Any) -> int:
    """Nesting depth as the parser counts it: a scalar is 0, `[]` and `{}` are 1."""
    if isinstance(value, list):
        return 1 + max((depth(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(item) for item in value.values()), default=0)
    return 0
