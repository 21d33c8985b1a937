"""Whole numbers as clients write them: ASCII digits only.

Python's `int()` also takes Arabic-Indic and full-width digits, `"1_000"`, `" 5 "` and `"+5"`; a query
parameter or header spelled so is a client bug that must be refused, not read as a number.
"""

from __future__ import annotations

import re

_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,18}")


def parse_whole_number(text: str) -> int | None:
    """The integer `text` spells in ASCII digits (optionally negative, at most 18 digits), else None."""
    return int(text) if _WHOLE_NUMBER.fullmatch(text) else None
