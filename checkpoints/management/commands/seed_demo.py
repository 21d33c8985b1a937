"""`manage.py seed_demo`: the `demo` workspace, an admin login, an API key and demo data. Idempotent.

- The staff superuser `admin` gets a generated password, printed once (when it is created), and a
  Membership of the workspace.
- An admin-scope API key named `demo` is created and printed once (first run); later runs say how to make
  another one (keys are stored hashed, so the secret cannot be shown again).
- Demo data goes through the real services. Each area has one small function in DEMO_DATA that loads its
  part once (it checks for its own marker) and returns whether it loaded anything.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from checkpoints.models import ApiKey, Membership, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire, checkpoint_handoff, checkpoint_save
from checkpoints.services.threads import thread_update
from checkpoints.services.workspaces import api_key_create, workspace_get_or_create

DEMO_SLUG = "demo"
ADMIN_USERNAME = "admin"
DEMO_KEY_NAME = "demo"
SOON_TTL_SECONDS = 300


def seed_checkpoints(workspace: Workspace, actor: Actor) -> bool:
    """Two threads: a research run (chain, branch, subgraph namespace, pinned root, handoff to a writer) and
    a support run (a tombstone, and a head that expires in five minutes, so the sweep has work to show)."""
    if Thread.objects.filter(workspace=workspace, thread_id="demo-research").exists():
        return False

    def save(thread_id: str, **kwargs: Any) -> Any:
        kwargs.setdefault("ttl_seconds", None)  # no TTL unless asked, whatever the workspace default
        return checkpoint_save(workspace=workspace, thread_id=thread_id, **kwargs).checkpoint

    research = "demo-research"
    question = "Which vector databases support hybrid search?"
    plan = save(
        research,
        agent_id="planner",
        framework="langgraph",
        step_name="plan",
        state={"question": question, "plan": ["search the web", "read the top sources", "write a summary"]},
        metadata={"source": "input", "demo": True},
        pinned=True,
    )
    search = save(
        research,
        agent_id="researcher",
        framework="langgraph",
        step_name="search",
        state={"question": question, "queries": ["hybrid search vector database"], "hits": 12},
        metadata={"source": "loop", "demo": True},
    )
    # A branch: another search strategy tried from the plan (an explicit parent that is not the head).
    save(
        research,
        agent_id="researcher",
        framework="langgraph",
        step_name="search",
        parent_id=plan.checkpoint_id,
        state={"question": question, "queries": ["BM25 + dense retrieval benchmark"], "hits": 4},
        metadata={"source": "loop", "demo": True, "branch": "alternative-query"},
    )
    save(
        research,
        namespace="researcher:fetch",
        agent_id="researcher",
        framework="langgraph",
        step_name="fetch",
        state={"url": "https://example.org/hybrid-search", "status": 200, "bytes": 48213},
    )
    read = save(
        research,
        agent_id="researcher",
        framework="langgraph",
        step_name="read",
        parent_id=search.checkpoint_id,
        state={
            "question": question,
            "findings": {"pgvector": "hybrid via tsvector + vector", "qdrant": "sparse + dense vectors"},
        },
        metadata={"source": "loop", "demo": True},
    )
    checkpoint_handoff(
        source=read,
        target_agent_id="writer",
        actor=actor,
        context={"instructions": "Write a 200-word summary."},
    )
    thread_update(
        thread=plan.thread,
        actor=actor,
        name="Hybrid search survey",
        user_id="alice",
        tags=["demo", "research"],
        scope={"graph_nodes": ["planner", "researcher", "writer"], "tags": ["research"]},
    )

    support = "demo-support"
    triage = save(
        support,
        agent_id="triage",
        step_name="triage",
        state={"ticket": 4312, "category": "billing", "priority": "high"},
    )
    lookup = save(
        support,
        agent_id="triage",
        step_name="lookup",
        state={"ticket": 4312, "invoice": "INV-2291", "paid": False},
    )
    checkpoint_expire(checkpoint=lookup, actor=actor)  # a tombstone: ids and checksum kept, payload gone
    save(
        support,
        agent_id="triage",
        step_name="answer",
        parent_id=triage.checkpoint_id,
        state={"ticket": 4312, "reply": "A refund has been issued.", "resolved": True},
        ttl_seconds=SOON_TTL_SECONDS,
    )
    thread_update(
        thread=triage.thread, actor=actor, name="Ticket 4312: refund", user_id="bob", tags=["demo", "support"]
    )
    return True


# Each area's demo data: (what, loader). A loader runs inside the seed transaction, checks its own marker
# and returns True if it loaded something now.
DEMO_DATA: list[tuple[str, Callable[[Workspace, Actor], bool]]] = [
    ("checkpoints", seed_checkpoints),
]


@dataclass
class DemoSeed:
    """What seed_demo did. Secrets are set only on the run that created them (they are never stored)."""

    workspace: Workspace
    admin_username: str = ADMIN_USERNAME
    admin_password: str | None = None
    api_key: str | None = None
    loaded: list[str] = field(default_factory=list)

    def credential_lines(self) -> list[str]:
        """Human-readable lines for the admin login and the API key."""
        if self.admin_password:
            admin = f"Admin login: {self.admin_username} / {self.admin_password}  (shown once)"
        else:
            admin = (
                f"Admin login: {self.admin_username} (password printed on the first run; "
                f"reset it with: manage.py changepassword {self.admin_username})"
            )
        if self.api_key:
            key = f"API key (admin scope, shown once): {self.api_key}"
        else:
            key = (
                "API key: printed on the first run only; make another with: "
                f"manage.py create_api_key --workspace {self.workspace.slug} --scopes admin"
            )
        return [admin, key]


@transaction.atomic
def seed_demo() -> DemoSeed:
    """Create what is missing of the demo workspace, its admin, its key and its data; touch nothing else."""
    actor = Actor.system("seed_demo")
    workspace, _ = workspace_get_or_create(slug=DEMO_SLUG, name="Demo")
    seed = DemoSeed(workspace=workspace)

    user_model = get_user_model()
    user = user_model.objects.filter(username=ADMIN_USERNAME).first()
    if user is None:
        seed.admin_password = secrets.token_urlsafe(12)
        user = user_model.objects.create_superuser(
            username=ADMIN_USERNAME, email="admin@example.com", password=seed.admin_password
        )
    Membership.objects.get_or_create(workspace=workspace, user=user)

    if not ApiKey.objects.filter(workspace=workspace, name=DEMO_KEY_NAME).exists():
        _, seed.api_key = api_key_create(
            workspace=workspace, name=DEMO_KEY_NAME, scope=ApiKey.Scope.ADMIN, actor=actor
        )

    seed.loaded = [name for name, load in DEMO_DATA if load(workspace, actor)]
    return seed


class Command(BaseCommand):
    help = "Create the demo workspace, admin login, API key and demo data (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        seed = seed_demo()
        self.stdout.write(f"Demo workspace {seed.workspace.slug!r} ready.")
        for line in seed.credential_lines():
            self.stdout.write(line)
        loaded = ", ".join(seed.loaded) if seed.loaded else "nothing new (already there)"
        self.stdout.write(f"Demo data loaded: {loaded}")
