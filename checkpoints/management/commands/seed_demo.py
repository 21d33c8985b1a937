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

from checkpoints.models import ApiKey, Job, Membership, Message, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire, checkpoint_handoff, checkpoint_save
from checkpoints.services.medallion_summaries import thread_summarize_submit
from checkpoints.services.medallions import medallion_checkpoint_submit
from checkpoints.services.messages import messages_append
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


RESEARCH_CONVERSATION = [
    ("user", "Which vector databases support hybrid search? I need keyword and semantic ranking together."),
    ("assistant", "I will search for current documentation and benchmarks, then read the top sources."),
    ("tool", "search: 12 results for 'hybrid search vector database' (pgvector, Qdrant, Weaviate, Vespa)."),
    ("assistant", "pgvector combines a tsvector ranking with vector distance in one SQL query."),
    ("assistant", "Qdrant stores sparse and dense vectors per point and fuses the two rankings."),
    ("user", "We decided to stay on PostgreSQL, so pgvector is the candidate. Does it need an extension?"),
    ("assistant", "Yes: CREATE EXTENSION vector. Hybrid ranking then needs no other service."),
    ("user", "Is reciprocal rank fusion better than a weighted sum for our data?"),
    (
        "assistant",
        "We will go with reciprocal rank fusion: it needs no score calibration between the two rankers.",
    ),
    ("user", "Great. Write a 200-word summary for the team."),
]

SUPPORT_CONVERSATION = [
    ("user", "I was charged twice for invoice INV-2291. Can you help?"),
    ("assistant", "I am sorry about that. Let me look up the invoice."),
    ("tool", "billing.lookup(INV-2291): two captures of 49.00 EUR, one duplicate."),
    ("assistant", "I found the duplicate charge and issued a refund of 49.00 EUR. It arrives in 3-5 days."),
    ("user", "Thank you! Will this happen again on my next renewal?"),
]


def seed_messages(workspace: Workspace, actor: Actor) -> bool:
    """The conversations behind the two demo threads (searchable, and the input of the research summary)."""
    if Message.objects.filter(thread__workspace=workspace, thread__thread_id="demo-research").exists():
        return False
    for thread_id, conversation in (
        ("demo-research", RESEARCH_CONVERSATION),
        ("demo-support", SUPPORT_CONVERSATION),
    ):
        messages_append(
            workspace=workspace,
            thread_id=thread_id,
            messages=[{"role": role, "content": text} for role, text in conversation],
        )
    return True


def seed_medallions(workspace: Workspace, actor: Actor) -> bool:
    """Two summary jobs through the real path: the research thread summarised into its scope's medallion,
    and a project medallion from session evidence. The worker `make run` starts picks them up."""
    # Jobs, not medallions, are the marker: the medallions appear only once a worker has run the jobs.
    if Job.objects.filter(workspace=workspace, kind=Job.Kind.SUMMARIZE).exists():
        return False
    research = Thread.objects.get(workspace=workspace, thread_id="demo-research")
    thread_summarize_submit(thread=research, actor=actor)
    medallion_checkpoint_submit(
        workspace=workspace,
        actor=actor,
        scope={"graph_nodes": ["repo:support-bot", "module:billing"], "tags": ["project_state"]},
        evidence={
            "session_summary": (
                "Refund flow for duplicate charges shipped. "
                "We decided to refund automatically below 100 EUR. "
                "Open: should renewals be retried when the card is declined?"
            ),
            "transcripts": [f"{role}: {text}" for role, text in SUPPORT_CONVERSATION],
            "artefacts": {
                "files": ["billing/refunds.py", "billing/lookup.py"],
                "command": "make test-billing",
            },
        },
    )
    return True


# Each area's demo data: (what, loader). A loader runs inside the seed transaction, checks its own marker
# and returns True if it loaded something now.
DEMO_DATA: list[tuple[str, Callable[[Workspace, Actor], bool]]] = [
    ("checkpoints", seed_checkpoints),
    ("messages", seed_messages),
    ("medallions", seed_medallions),
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
