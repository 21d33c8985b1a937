"""When a thread is deleted as idle, and which rule decides it: the one definition that the idle-thread
expiry, the retention preview, the API's thread detail and the dashboard's thread page all read
(docs/retention.md, "Which rule wins").

The rules, most specific first:
1. `pinned`: a pinned thread, or one holding a live pinned checkpoint, is never deleted as idle.
2. `thread`: a thread with its own idle expiry (`ttl_seconds`) is deleted at its `expires_at` (last write +
   ttl_seconds, kept on every write), whether that is sooner or later than the workspace's rule.
3. `workspace`: otherwise, `thread_idle_ttl_seconds` after its last write (`updated_at`), if the workspace
   has that rule.
4. none of these: never.

Everything is computed in SQL as two annotations, `effective_expires_at` and `expiry_source`, in the query
that reads the thread anyway: no extra query, on any backend.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import Case, Exists, ExpressionWrapper, F, OuterRef, Q, QuerySet, Value, When
from django.db.models.lookups import Exact, GreaterThan, IsNull

from checkpoints.exceptions import NotFound
from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.services.thread_rows import thread_touch_values

SOURCE_PINNED = "pinned"
SOURCE_THREAD = "thread"
SOURCE_WORKSPACE = "workspace"
EXPIRY_SOURCES = (SOURCE_PINNED, SOURCE_THREAD, SOURCE_WORKSPACE)

# A thread's own workspace's rule, read by a join (every workspace at once: the idle-thread expiry).
OWN_WORKSPACE = object()

# The thread's columns the rules read, with their types: a preview gives would-be values in their place.
RULE_COLUMNS: dict[str, models.Field[Any, Any]] = {
    "pinned": models.BooleanField(),
    "ttl_seconds": models.IntegerField(),
    "expires_at": models.DateTimeField(),
    "updated_at": models.DateTimeField(),
}


def holds_pinned_checkpoint() -> Exists:
    """True for a thread with a live (not tombstoned) pinned checkpoint in any namespace."""
    return Exists(Checkpoint.objects.filter(thread=OuterRef("pk"), pinned=True, expired_at__isnull=True))


def with_idle_expiry(
    queryset: QuerySet[Thread],
    *,
    workspace: Any = OWN_WORKSPACE,
    would_be: Mapping[str, Any] | None = None,
) -> QuerySet[Thread]:
    """Annotate `effective_expires_at` (when the idle-thread expiry deletes the thread; None: never) and
    `expiry_source` (the rule that decides it: "pinned", "thread", "workspace", or None when no rule
    applies).

    `workspace`: whose `thread_idle_ttl_seconds` applies, as the object holds it (a preview may try a policy
    that is not saved yet); by default each thread's own workspace's, through a join. `would_be`: values
    of RULE_COLUMNS read instead of the row's (a preview of a change not saved yet).
    """

    def column(name: str) -> Any:
        if would_be is not None and name in would_be:
            return Value(would_be[name], output_field=RULE_COLUMNS[name])
        return F(name)

    if workspace is OWN_WORKSPACE:
        idle_ttl: Any = F("workspace__thread_idle_ttl_seconds")
        has_rule: Any = GreaterThan(idle_ttl, 0)
    else:
        assert isinstance(workspace, Workspace)
        seconds = workspace.thread_idle_ttl_seconds
        idle_ttl = Value(seconds or 0)
        has_rule = Value(bool(seconds), output_field=models.BooleanField())
    kept = Q(Exact(column("pinned"), True)) | Q(holds_pinned_checkpoint=True)
    own = Q(IsNull(column("ttl_seconds"), False))
    # Typed as a plain integer (no cast in SQL): Django's SQLite duration arithmetic accepts no other.
    seconds_after = ExpressionWrapper(idle_ttl, output_field=models.IntegerField())
    idle_for = ExpressionWrapper(
        seconds_after * Value(timedelta(seconds=1)), output_field=models.DurationField()
    )
    by_workspace = column("updated_at") + idle_for
    return queryset.alias(holds_pinned_checkpoint=holds_pinned_checkpoint()).annotate(
        effective_expires_at=Case(
            When(kept, then=Value(None)),
            When(own, then=column("expires_at")),
            When(has_rule, then=by_workspace),
            default=Value(None),
            output_field=models.DateTimeField(),
        ),
        expiry_source=Case(
            When(kept, then=Value(SOURCE_PINNED)),
            When(own, then=Value(SOURCE_THREAD)),
            When(has_rule, then=Value(SOURCE_WORKSPACE)),
            default=Value(None),
            output_field=models.CharField(),
        ),
    )


def thread_with_idle_expiry(*, workspace: Workspace, thread_id: str) -> Thread:
    """The workspace's thread with `effective_expires_at` and `expiry_source` (one query), for a page that
    shows it; NotFound if there is none."""
    threads = with_idle_expiry(Thread.objects.filter(workspace=workspace), workspace=workspace)
    thread = threads.filter(thread_id=thread_id).first()
    if thread is None:
        raise NotFound(f"Thread {thread_id!r} not found.")
    thread.workspace = workspace
    return thread


def idle_expiry_after_update(
    *, thread: Thread, now: datetime, **changes: Any
) -> tuple[datetime | None, str | None]:
    """(`effective_expires_at`, `expiry_source`) the thread would have after `thread_update(**changes)` at
    `now` (`ttl_seconds`, `pinned`): the same annotations, read on the values that update would write (its
    fields, then the write's own touch), in one query. Nothing is saved: a preview."""
    after = copy.copy(thread)
    for name, value in changes.items():
        setattr(after, name, value)
    thread_touch_values(after, now=now)
    would_be = {name: getattr(after, name) for name in RULE_COLUMNS}
    threads = with_idle_expiry(
        Thread.objects.filter(pk=thread.pk), workspace=thread.workspace, would_be=would_be
    )
    row: Any = threads.only("pk").get()
    return row.effective_expires_at, row.expiry_source


def idle_threads(*, now: datetime, workspace: Workspace | None = None) -> QuerySet[Thread]:
    """The threads the idle-thread expiry deletes at `now` (in every workspace, or in this one under its
    policy as the object holds it): those whose `effective_expires_at` has passed.

    The extra conditions select nothing the definition does not; they only let the database narrow the
    search with the `thread_expiring` index (and the workspace prefix of `thread_unique_id`) instead of
    reading every thread.
    """
    policies: list[tuple[int, int | None]] = (
        [(workspace.pk, workspace.thread_idle_ttl_seconds)]
        if workspace is not None
        else list(
            Workspace.objects.filter(thread_idle_ttl_seconds__isnull=False).values_list(
                "pk", "thread_idle_ttl_seconds"
            )
        )
    )
    candidates = Q(expires_at__lte=now)
    for workspace_pk, ttl in policies:
        if ttl:
            candidates |= Q(
                workspace_id=workspace_pk,
                ttl_seconds__isnull=True,
                updated_at__lte=now - timedelta(seconds=ttl),
            )
    candidate_threads: QuerySet[Thread] = Thread.objects.filter(pinned=False).filter(candidates)
    if workspace is not None:
        annotated = with_idle_expiry(candidate_threads.filter(workspace=workspace), workspace=workspace)
    else:
        annotated = with_idle_expiry(candidate_threads)
    return annotated.filter(Q(effective_expires_at__lte=now))
