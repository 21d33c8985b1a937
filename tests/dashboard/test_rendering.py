"""The pure rendering helpers: tree layout, capped JSON, side-by-side diffs."""

from __future__ import annotations

import copy
from datetime import timedelta

import jsonpatch
from django.utils import timezone

from checkpoints.dashboard.diffview import side_by_side
from checkpoints.dashboard.jsonview import render_json, render_json_text
from checkpoints.dashboard.tree import MAX_LANES, build_trees
from checkpoints.models import Checkpoint, Thread

NOW = timezone.now()


def node(pk: int, parent: int | None = None, namespace: str = "", **fields: object) -> Checkpoint:
    return Checkpoint(
        pk=pk,
        checkpoint_id=f"c{pk}",
        parent_checkpoint_id=f"c{parent}" if parent else None,
        namespace=namespace,
        agent_id="a",
        created_at=NOW,
        **fields,
    )


def lanes(rows: list[Checkpoint], forks: list[Thread] | None = None) -> dict[str, int]:
    (tree,) = build_trees(rows, forks or [], NOW)
    return {row.checkpoint.checkpoint_id: row.lane for row in tree.rows}


def test_it_keeps_a_linear_history_in_one_lane() -> None:
    assert lanes([node(1), node(2, 1), node(3, 2)]) == {"c1": 0, "c2": 0, "c3": 0}


def test_it_opens_a_lane_for_each_branch_and_reuses_it_once_free() -> None:
    # c1 ─ c2 ─ c4           (first child continues the lane)
    #  └── c3                (branch: lane 1)
    #            c5 (root)   (lane 0 is free again once c4 ends it)
    placed = lanes([node(1), node(2, 1), node(3, 1), node(4, 2), node(5)])
    assert placed == {"c1": 0, "c2": 0, "c3": 1, "c4": 0, "c5": 0}
    assert lanes([node(1), node(2, 1), node(3, 1), node(4, 1), node(5, 2)])["c4"] == 2  # c3's lane is busy


def test_it_never_lets_two_spans_overlap_in_a_lane() -> None:
    # c1's second child arrives late: its edge spans rows 0..3 and must not cross c2's branch lane.
    placed = lanes([node(1), node(2, 1), node(3, 2), node(4, 2), node(5, 1)])
    assert placed["c4"] != placed["c5"] and placed["c4"] != 0 and placed["c5"] != 0


def test_it_marks_heads_tombstones_branches_and_missing_parents() -> None:
    rows = [node(1), node(2, 1), node(3, 1, expired_at=NOW), node(4, 99), node(5, 2, namespace="sub")]
    trees = {tree.namespace: tree for tree in build_trees(rows, [], NOW)}
    assert list(trees) == ["", "sub"]
    by_id = {row.checkpoint.checkpoint_id: row for row in trees[""].rows}
    assert trees[""].head is not None and trees[""].head.checkpoint_id == "c4"  # newest readable
    assert not by_id["c3"].is_readable and by_id["c3"].is_branch
    assert not by_id["c4"].parent_shown and "t-dangling" in by_id["c4"].svg
    assert trees["sub"].rows[0].parent_shown is False  # parents live in their own namespace


def test_it_treats_a_passed_expiry_as_expired_at_once() -> None:
    rows = [node(1), node(2, 1, expires_at=NOW - timedelta(seconds=1))]
    (tree,) = build_trees(rows, [], NOW)
    assert tree.head is not None and tree.head.checkpoint_id == "c1"
    assert "t-tomb" in tree.rows[1].svg


def test_it_draws_handoffs_as_diamonds_and_attaches_forks() -> None:
    fork = Thread(thread_id="what-if", forked_from_checkpoint_id="c1", forked_from_namespace="")
    (tree,) = build_trees([node(1), node(2, 1, handoff_from="planner")], [fork], NOW)
    assert "<polygon" in tree.rows[1].svg and "<circle" in tree.rows[0].svg
    assert tree.rows[0].forks == [fork]


def test_it_caps_the_width_of_a_wide_fan() -> None:
    rows = [node(1)] + [node(n, 1) for n in range(2, MAX_LANES + 10)]
    placed = lanes(rows)
    assert max(placed.values()) == MAX_LANES  # the overflow column, drawn without edges


def test_it_escapes_and_highlights_json() -> None:
    rendered = render_json({"<k>": ["<script>", 1, 2.5, True, None]})
    html = str(rendered.html)
    assert "<script>" not in html and "&lt;script&gt;" in html and "&quot;&lt;k&gt;&quot;" in html
    for css in ("j-key", "j-str", "j-num", "j-bool", "j-null"):
        assert css in html
    assert not rendered.truncated


def test_it_caps_nodes_depth_and_strings() -> None:
    many = render_json(list(range(10_000)), max_nodes=100)
    assert many.truncated and "9,901 more items not shown" in str(many.html)
    deep: object = "bottom"
    for _ in range(60):
        deep = {"d": deep}
    nested = render_json(deep, max_depth=10)
    assert nested.truncated and "nested too deep" in str(nested.html) and "bottom" not in str(nested.html)
    long = render_json("z" * 5_000, max_string=100)
    assert long.truncated and "4,900 more characters" in str(long.html)


def test_it_renders_stored_text_and_nothing_for_an_erased_payload() -> None:
    assert render_json_text(None) is None
    rendered = render_json_text('{"a":1}')
    assert rendered is not None and rendered.size_bytes == 7


def test_it_shows_each_patch_operation_with_the_value_before_and_after() -> None:
    source = {"a": [1, 2, 3], "b": {"x": 1}, "keep": "same", "gone": True}
    target = {"a": [1, 3], "c": {"x": 1}, "keep": "changed", "new": [4]}
    patch = list(jsonpatch.make_patch(source, target).patch)
    rows = {(row.op, row.path): row for row in side_by_side(copy.deepcopy(source), patch).rows}
    assert "2" in str(rows[("remove", "/a/1")].before.html)  # type: ignore[union-attr]
    assert rows[("remove", "/a/1")].after is None
    replaced = rows[("replace", "/keep")]
    assert "same" in str(replaced.before.html) and "changed" in str(replaced.after.html)  # type: ignore[union-attr]
    assert rows[("add", "/new")].before is None
    assert ("move", "/c") in rows and rows[("move", "/c")].from_path == "/b"
    assert jsonpatch.apply_patch(source, patch) == target


def test_it_limits_the_number_of_operations_shown() -> None:
    patch = [{"op": "add", "path": f"/k{n}", "value": n} for n in range(20)]
    diff = side_by_side({}, patch, limit=5)
    assert len(diff.rows) == 5 and diff.total == 20 and diff.truncated


def test_it_formats_durations_and_compact_json_for_templates() -> None:
    from checkpoints.templatetags.dashboard import compact_json, duration

    assert duration(2_592_000) == "30 days"
    assert duration(3_725) == "1 h 2 min 5 s"
    assert duration(0) == "0 s" and duration(None) == ""
    assert compact_json({"a": [1, "é"]}) == '{"a": [1, "é"]}'
    cut = compact_json({"k": "x" * 100}, 20)
    assert len(cut) == 20 and cut.endswith("…")
