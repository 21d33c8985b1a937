"""The checkpoint diff page names the checkpoint fields that changed (agent, step, step name, parent,
namespace, run, handoff, metadata), not only the changes inside the documents."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.dashboard.diffview import field_changes
from checkpoints.models import Workspace
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def changed_rows(html: str) -> dict[str, tuple[str, ...]]:
    """field → the texts of its cells, from the "Checkpoint fields" table."""
    table = html.split('aria-label="Changed fields"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr data-field="(\w+)">(.*?)</tr>', table, re.S)
    return {
        field: tuple(
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", body, re.S)
        )
        for field, body in rows
    }


def diff_page(dash: Client, workspace: Workspace, thread_id: str, checkpoint_id: str, **params: str) -> str:
    url = reverse("dashboard:checkpoint-diff", args=[workspace.slug, thread_id, checkpoint_id])
    response = dash.get(url, {"ns": "", **params})
    assert response.status_code == 200
    return str(response.content.decode())


def test_it_shows_a_handoff_as_a_change_of_agent_step_parent_and_handoff(dash: Client, world: World) -> None:
    html = diff_page(dash, world.workspace, "run-1", world.handoff.checkpoint_id)
    rows = changed_rows(html)
    assert rows["agent_id"] == ("Agent", "planner", "reviewer")
    assert rows["step_index"] == ("Step", str(world.step2.step_index), str(world.step2.step_index + 1))
    assert rows["parent_id"][0] == "Parent"
    assert rows["handoff_from"] == ("Handed off from", "—", "planner")
    assert "step_name" not in rows and "metadata" not in rows  # a handoff keeps the step name and metadata


def test_it_shows_step_name_and_metadata_changes_and_points_at_the_metadata_rows(
    dash: Client, workspace: Workspace
) -> None:
    first = make_checkpoint(workspace, "t1", agent_id="a", step_name="plan", metadata={"source": "input"})
    second = make_checkpoint(workspace, "t1", agent_id="a", step_name="act", metadata={"source": "loop"})
    rows = changed_rows(diff_page(dash, workspace, "t1", second.checkpoint_id))
    assert rows["step_name"] == ("Step name", "plan", "act")
    assert rows["metadata"] == ("Metadata", "changed: see the rows under /metadata below")
    assert "agent_id" not in rows
    html = diff_page(dash, workspace, "t1", second.checkpoint_id)
    assert "<code>/metadata/source</code>" in html  # the rows it points at
    # Against itself nothing changed.
    same = diff_page(dash, workspace, "t1", first.checkpoint_id, against=first.checkpoint_id)
    assert "Same agent, step, step name, parent, namespace, run, handoff and metadata." in same


def test_it_compares_a_root_with_nothing(workspace: Workspace) -> None:
    root = make_checkpoint(workspace, "t1", agent_id="a", step_name="start", run_id="r-1")
    changes = {change.field: (change.before, change.after) for change in field_changes(None, root)}
    assert changes == {
        "agent_id": (None, "a"),
        "step_index": (None, str(root.step_index)),
        "step_name": (None, "start"),
        "namespace": (None, ""),
        "run_id": (None, "r-1"),
        "metadata": (None, None),
    }


def test_it_escapes_field_values(dash: Client, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", agent_id="a", step_name="plan")
    second = make_checkpoint(workspace, "t1", agent_id="a", step_name="<img src=x onerror=alert(1)>")
    html = diff_page(dash, workspace, "t1", second.checkpoint_id)
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
