"""Readable, collapsible, syntax-highlighted JSON as HTML, with a budget so a 5 MB document cannot freeze
the page: beyond `max_nodes` values, `max_depth` levels or `max_string` characters per string the rest is
summarised ("… 12,000 more items") and the page offers the raw download instead.

Collapsing uses <details>/<summary>, so it works without JavaScript. Every key and value goes through
`html.escape`: a state holding "<script>" renders as text.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString, mark_safe

DEFAULT_MAX_NODES = 2_000
DEFAULT_MAX_DEPTH = 32
DEFAULT_MAX_STRING = 2_000
# Containers deeper than this start collapsed (the reader opens what interests them).
OPEN_DEPTH = 2
# Above this many bytes the text is not even decoded: parsing tens of MB per page view would stall it.
MAX_DECODE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class RenderedJSON:
    html: SafeString
    truncated: bool
    size_bytes: int
    shown_nodes: int


def _scalar(value: Any, max_string: int) -> tuple[str, bool]:
    """HTML for a JSON scalar, and whether it was shortened."""
    if value is None:
        return '<span class="j-null">null</span>', False
    if isinstance(value, bool):
        return f'<span class="j-bool">{"true" if value else "false"}</span>', False
    if isinstance(value, int | float):
        return f'<span class="j-num">{html.escape(json.dumps(value))}</span>', False
    text = str(value)
    cut = len(text) > max_string
    shown = html.escape(json.dumps(text[:max_string], ensure_ascii=False))
    more = f'<span class="j-more"> … {len(text) - max_string:,} more characters</span>' if cut else ""
    return f'<span class="j-str">{shown}</span>{more}', cut


class _Renderer:
    def __init__(self, max_nodes: int, max_depth: int, max_string: int) -> None:
        self.max_nodes, self.max_depth, self.max_string = max_nodes, max_depth, max_string
        self.nodes = 0
        self.truncated = False
        self.out: list[str] = []

    def value(self, value: Any, depth: int, label: str) -> None:
        self.nodes += 1
        if isinstance(value, dict | list):
            self.container(value, depth, label)
            return
        text, cut = _scalar(value, self.max_string)
        self.truncated |= cut
        self.out.append(f"<li>{label}{text}</li>")

    def container(self, value: dict[str, Any] | list[Any], depth: int, label: str) -> None:
        is_dict = isinstance(value, dict)
        opening, closing = ("{", "}") if is_dict else ("[", "]")
        count = len(value)
        noun = ("key" if is_dict else "item") + ("" if count == 1 else "s")
        if count == 0:
            self.out.append(f'<li>{label}<span class="j-punct">{opening}{closing}</span></li>')
            return
        if depth >= self.max_depth:
            self.truncated = True
            self.out.append(
                f'<li>{label}<span class="j-punct">{opening}</span><span class="j-more"> … {count:,} '
                f'{noun} nested too deep to show</span><span class="j-punct">{closing}</span></li>'
            )
            return
        is_open = " open" if depth < OPEN_DEPTH else ""
        self.out.append(
            f'<li><details class="j-node"{is_open}><summary>{label}<span class="j-punct">{opening}</span>'
            f'<span class="j-count">{count:,} {noun}</span></summary><ul class="j-list">'
        )
        items = value.items() if isinstance(value, dict) else enumerate(value)
        shown = 0
        for key, child in items:
            if self.nodes >= self.max_nodes:
                break
            child_label = (
                f'<span class="j-key">{html.escape(json.dumps(key, ensure_ascii=False))}</span>'
                '<span class="j-punct">: </span>'
                if is_dict
                else f'<span class="j-index">{key}</span>'
            )
            self.value(child, depth + 1, child_label)
            shown += 1
        if shown < count:
            self.truncated = True
            self.out.append(f'<li class="j-more">… {count - shown:,} more {noun} not shown</li>')
        self.out.append(f'</ul><span class="j-punct">{closing}</span></details></li>')


def render_json(
    value: Any,
    *,
    size_bytes: int | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_string: int = DEFAULT_MAX_STRING,
) -> RenderedJSON:
    """Render a decoded JSON value within the budget."""
    renderer = _Renderer(max_nodes, max_depth, max_string)
    renderer.value(value, 0, "")
    body = "".join(renderer.out)
    if size_bytes is None:
        size_bytes = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    return RenderedJSON(
        # Safe: every key and value fragment was escaped while it was built.
        html=mark_safe(f'<ul class="json">{body}</ul>'),  # nosec B308 B703 # every key and value inside was html.escape()d as it was built
        truncated=renderer.truncated,
        size_bytes=size_bytes,
        shown_nodes=renderer.nodes,
    )


def render_json_text(text: str | None, **caps: int) -> RenderedJSON | None:
    """Render stored JSON text (None for a tombstone's erased payload)."""
    if text is None:
        return None
    size = len(text.encode("utf-8"))
    if size > MAX_DECODE_BYTES:
        notice = f'<p class="j-more">{size:,} bytes: too large to display here.</p>'
        return RenderedJSON(html=mark_safe(notice), truncated=True, size_bytes=size, shown_nodes=0)  # nosec B308 B703 # the notice holds only a formatted integer
    return render_json(json.loads(text), size_bytes=size, **caps)
