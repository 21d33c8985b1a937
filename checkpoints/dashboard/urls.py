"""Routes of /dashboard/. Everything under w/<slug>/ belongs to one workspace the user must be able to see."""

from __future__ import annotations

from django.urls import include, path

from checkpoints import routes as _routes  # noqa: F401  (registers the `cid` path converter)
from checkpoints.dashboard.views import (
    agents,
    apikeys,
    audit,
    auth,
    checkpoints,
    jobs,
    medallions,
    retention,
    search,
    store,
    threads,
    timeline,
    workspaces,
)
from checkpoints.dashboard.views.actions import annotations as annotation_actions
from checkpoints.dashboard.views.actions import checkpoints as checkpoint_actions
from checkpoints.dashboard.views.actions import keys as key_actions
from checkpoints.dashboard.views.actions import medallions as medallion_actions
from checkpoints.dashboard.views.actions import retention as retention_actions
from checkpoints.dashboard.views.actions import scope as scope_actions
from checkpoints.dashboard.views.actions import summarize as summarize_actions
from checkpoints.dashboard.views.actions import thread_retention as thread_retention_actions
from checkpoints.dashboard.views.actions import threads as thread_actions

app_name = "dashboard"

THREAD = "threads/<cid:thread_id>/"
CHECKPOINT = f"{THREAD}checkpoints/<cid:checkpoint_id>/"
MEDALLION = "medallions/<uuid:medallion_id>/"

workspace_patterns = [
    path("", workspaces.overview, name="overview"),
    path("threads/", threads.thread_list, name="threads"),
    path("search/", search.search, name="search"),
    path("handoffs/", agents.handoff_list, name="handoffs"),
    path("agents/<path:agent_id>/", agents.agent_detail, name="agent"),
    path(THREAD, threads.thread_detail, name="thread"),
    path(f"{THREAD}timeline/", timeline.thread_timeline, name="thread-timeline"),
    path(f"{THREAD}delete/", thread_actions.ThreadDeleteAction.view(), name="thread-delete"),
    path(f"{THREAD}prune/", thread_actions.ThreadPruneAction.view(), name="thread-prune"),
    path(f"{THREAD}summarize/", summarize_actions.ThreadSummarizeAction.view(), name="thread-summarize"),
    path(f"{THREAD}scope/", scope_actions.ThreadScopeAction.view(), name="thread-scope"),
    path(f"{THREAD}keep/", thread_retention_actions.KeepUntilAction.view(), name="thread-keep"),
    path(f"{THREAD}pin/", thread_retention_actions.ThreadPinAction.view(), name="thread-pin"),
    path(f"{THREAD}unpin/", thread_retention_actions.ThreadUnpinAction.view(), name="thread-unpin"),
    path(f"{THREAD}annotations/", annotation_actions.ThreadAnnotateAction.view(), name="thread-annotate"),
    path(CHECKPOINT, checkpoints.checkpoint_detail, name="checkpoint"),
    path(
        f"{CHECKPOINT}annotations/",
        annotation_actions.CheckpointAnnotateAction.view(),
        name="checkpoint-annotate",
    ),
    path(f"{CHECKPOINT}raw/", checkpoints.checkpoint_raw, name="checkpoint-raw"),
    path(f"{CHECKPOINT}diff/", checkpoints.checkpoint_diff_view, name="checkpoint-diff"),
    path(f"{CHECKPOINT}fork/", thread_actions.ForkAction.view(), name="checkpoint-fork"),
    path(f"{CHECKPOINT}expire/", checkpoint_actions.ExpireAction.view(), name="checkpoint-expire"),
    path(f"{CHECKPOINT}pin/", checkpoint_actions.PinAction.view(), name="checkpoint-pin"),
    path(f"{CHECKPOINT}unpin/", checkpoint_actions.UnpinAction.view(), name="checkpoint-unpin"),
    path(f"{CHECKPOINT}ttl/", checkpoint_actions.TtlAction.view(), name="checkpoint-ttl"),
    path("medallions/", medallions.medallion_list, name="medallions"),
    path(MEDALLION, medallions.medallion_detail, name="medallion"),
    path(f"{MEDALLION}stale/", medallion_actions.MarkStaleAction.view(), name="medallion-stale"),
    path("audit/", audit.audit_log, name="audit"),
    path("audit/export.csv", audit.audit_export_csv, name="audit-export-csv"),
    path("audit/export.json", audit.audit_export_json, name="audit-export-json"),
    path("store/", store.store, name="store"),
    path("store/export.json", store.store_export_json, name="store-export-json"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/<uuid:job_id>/", jobs.job_detail, name="job"),
    path("retention/", retention.retention, name="retention"),
    path("retention/edit/", retention_actions.RetentionPolicyAction.view(), name="retention-edit"),
    path("retention/sweep/", retention_actions.SweepAction.view(), name="retention-sweep"),
    path("keys/", apikeys.api_key_list, name="keys"),
    path("keys/new/", key_actions.ApiKeyCreateAction.view(), name="key-create"),
    path("keys/<slug:prefix>/revoke/", key_actions.ApiKeyRevokeAction.view(), name="key-revoke"),
]

urlpatterns = [
    path("", workspaces.home, name="home"),
    path("login/", auth.login, name="login"),
    path("logout/", auth.logout, name="logout"),
    path("w/<slug:slug>/", include(workspace_patterns)),
]
