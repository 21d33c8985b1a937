"""The checkpoint tree of a thread, one per namespace, laid out in lanes like a `git log --graph`.

Rows are checkpoints in creation order (root at the top). A node's first child continues its lane; every
other child (a branch) opens the lowest lane that is free over the rows its edge spans. Each row carries a
small inline SVG drawing its slice of the lanes, so the graph stays aligned with the HTML row beside it
(links, badges) and the whole tree is real markup that works without JavaScript.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from checkpoints.dashboard.steps import StepSummary
from checkpoints.models import Checkpoint, Thread

LANE_WIDTH = 16
ROW_HEIGHT = 30
MID = ROW_HEIGHT // 2
# A row grows taller when its label wraps (labels are never cut, see docs/dashboard.md); its
# SVG is stretched to the row's height (static/checkpoints/dashboard.css) and anchored at the top, so the
# node stays beside the first line and the edges leaving the row's bottom are drawn this far down, clipped
# at the row's bottom edge.
EDGE_BOTTOM = 40 * ROW_HEIGHT
# Wider fans are drawn in one overflow column without edges (the row still names its parent).
MAX_LANES = 16


@dataclass
class TreeRow:
    checkpoint: Checkpoint
    lane: int
    is_head: bool
    is_readable: bool
    parent_shown: bool
    is_branch: bool
    forks: list[Thread] = field(default_factory=list)
    step: StepSummary | None = None
    svg: SafeString = field(default_factory=lambda: mark_safe(""))  # nosec B308 # an empty string


@dataclass
class NamespaceTree:
    namespace: str
    rows: list[TreeRow]
    lanes: int
    head: Checkpoint | None

    @property
    def label(self) -> str:
        return self.namespace or "(root namespace)"


@dataclass(frozen=True)
class _Span:
    """A lane is busy from `start` to `end` (row numbers); the edge leaves `origin_lane` at `start`."""

    lane: int
    start: int
    end: int
    origin_lane: int


class _Lanes:
    def __init__(self) -> None:
        self.spans: list[_Span] = []
        self.by_lane: dict[int, list[_Span]] = defaultdict(list)

    def free(self, lane: int, start: int, end: int) -> bool:
        # Spans may touch at an end row (a node shared by both); they may not overlap.
        return all(span.end <= start or end <= span.start for span in self.by_lane[lane])

    def first_free(self, start: int, end: int) -> int | None:
        return next((lane for lane in range(MAX_LANES) if self.free(lane, start, end)), None)

    def add(self, span: _Span) -> None:
        self.spans.append(span)
        self.by_lane[span.lane].append(span)


def _x(lane: int) -> int:
    return LANE_WIDTH // 2 + lane * LANE_WIDTH


def _node_shape(row: TreeRow) -> SafeString:
    x = _x(row.lane)
    classes = ["t-node", f"lane-{row.lane % 8}"]
    if row.is_head:
        classes.append("t-head")
    if not row.is_readable:
        classes.append("t-tomb")
    if row.checkpoint.pinned:
        classes.append("t-pinned")
    css = " ".join(classes)
    if row.checkpoint.handoff_from:
        # A diamond: handoffs differ by shape, not only by colour.
        points = f"{x},{MID - 6} {x + 6},{MID} {x},{MID + 6} {x - 6},{MID}"
        return format_html('<polygon class="{}" points="{}"/>', css, points)
    return format_html('<circle class="{}" cx="{}" cy="{}" r="{}"/>', css, x, MID, 6 if row.is_head else 5)


def _row_svg(row_index: int, row: TreeRow, spans: list[_Span], lanes: int) -> SafeString:
    parts: list[tuple[str, ...]] = []
    for span in spans:
        x = _x(span.lane)
        colour = f"lane-{span.lane % 8}"
        if span.start < row_index < span.end:
            parts.append((colour, f"M{x} 0V{EDGE_BOTTOM}"))
        elif row_index == span.start and span.origin_lane == span.lane:
            parts.append((colour, f"M{x} {MID}V{EDGE_BOTTOM}"))
        elif row_index == span.start:
            ox = _x(span.origin_lane)
            curve = f"M{ox} {MID}C{ox} {ROW_HEIGHT - 4} {x} {MID + 4} {x} {ROW_HEIGHT}V{EDGE_BOTTOM}"
            parts.append((colour, curve))
        elif row_index == span.end:
            parts.append((colour, f"M{x} 0V{MID}"))
    if not row.parent_shown and row.checkpoint.parent_checkpoint_id:
        x = _x(row.lane)
        parts.append((f"lane-{row.lane % 8} t-dangling", f"M{x} 0V{MID - 6}"))
    edges = format_html_join("", '<path class="t-edge {}" d="{}"/>', parts)
    width = lanes * LANE_WIDTH
    return format_html(
        '<svg class="t-svg" width="{}" height="{}" viewBox="0 0 {} {}" preserveAspectRatio="xMinYMin meet"'
        ' aria-hidden="true" focusable="false">{}{}</svg>',
        width,
        ROW_HEIGHT,
        width,
        ROW_HEIGHT,
        edges,
        _node_shape(row),
    )


def _parents(nodes: list[Checkpoint]) -> tuple[list[int | None], dict[int, list[int]]]:
    """Each row's parent row (None when the parent is not among the rows) and each row's child rows."""
    index = {node.checkpoint_id: position for position, node in enumerate(nodes)}
    parents: list[int | None] = []
    children: dict[int, list[int]] = defaultdict(list)
    for position, node in enumerate(nodes):
        parent = index.get(node.parent_checkpoint_id or "")
        parent = parent if parent is not None and parent < position else None
        parents.append(parent)
        if parent is not None:
            children[parent].append(position)
    return parents, children


def _assign_lanes(
    parents: list[int | None], children: dict[int, list[int]]
) -> tuple[list[int], list[bool], _Lanes]:
    """Each row's lane and whether it starts a branch, plus the spans to draw."""
    lanes = _Lanes()
    lane_of: list[int] = []
    branch: list[bool] = []
    for position, parent in enumerate(parents):
        if parent is not None and children[parent][0] == position:
            lane = lane_of[parent]  # the continuation span was reserved when the parent was placed
        elif parent is not None and lane_of[parent] < MAX_LANES:
            found = lanes.first_free(parent, position)
            lane = MAX_LANES if found is None else found
            if found is not None:
                lanes.add(_Span(found, parent, position, lane_of[parent]))
        else:
            found = lanes.first_free(position, position)
            lane = MAX_LANES if found is None else found
        lane_of.append(lane)
        branch.append(parent is not None and children[parent][0] != position)
        if children[position] and lane < MAX_LANES:
            lanes.add(_Span(lane, position, children[position][0], lane))
    return lane_of, branch, lanes


def _layout(nodes: list[Checkpoint], head: Checkpoint | None, now: datetime) -> NamespaceTree:
    parents, children = _parents(nodes)
    lane_of, branch, lanes = _assign_lanes(parents, children)
    rows = [
        TreeRow(
            checkpoint=node,
            lane=lane_of[position],
            is_head=head is not None and node.pk == head.pk,
            is_readable=node.is_readable(now),
            parent_shown=parents[position] is not None,
            is_branch=branch[position],
        )
        for position, node in enumerate(nodes)
    ]
    width = max(lane_of, default=0) + 1
    spans_by_row: dict[int, list[_Span]] = defaultdict(list)
    for span in lanes.spans:
        for row_index in range(span.start, span.end + 1):
            spans_by_row[row_index].append(span)
    for row_index, row in enumerate(rows):
        row.svg = _row_svg(row_index, row, spans_by_row[row_index], width)
    return NamespaceTree(namespace=nodes[0].namespace, rows=rows, lanes=width, head=head)


def build_trees(
    checkpoints: list[Checkpoint],
    forks: list[Thread],
    now: datetime,
    steps: dict[int, StepSummary] | None = None,
) -> list[NamespaceTree]:
    """One tree per namespace (root namespace first), from checkpoints in any order.

    The head of each namespace is its newest readable checkpoint (the same rule as `checkpoint_head`).
    `forks` are threads forked from this one; each is attached to the checkpoint it was forked at. `steps`
    (checkpoints.dashboard.steps, by primary key) says what ran at each.
    """
    by_namespace: dict[str, list[Checkpoint]] = defaultdict(list)
    for checkpoint in sorted(checkpoints, key=lambda c: c.pk):
        by_namespace[checkpoint.namespace].append(checkpoint)
    forks_at: dict[tuple[str, str], list[Thread]] = defaultdict(list)
    for fork in forks:
        forks_at[(fork.forked_from_namespace, fork.forked_from_checkpoint_id)].append(fork)
    trees = []
    for namespace in sorted(by_namespace):
        nodes = by_namespace[namespace]
        head = next((node for node in reversed(nodes) if node.is_readable(now)), None)
        tree = _layout(nodes, head, now)
        for row in tree.rows:
            row.forks = forks_at.get((namespace, row.checkpoint.checkpoint_id), [])
            row.step = (steps or {}).get(row.checkpoint.pk)
        trees.append(tree)
    return trees
