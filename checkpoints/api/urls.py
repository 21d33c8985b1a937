"""Routes of /api/v1/. Public ids in paths use the `cid` converter ([A-Za-z0-9._:-]{1,128})."""

from __future__ import annotations

from django.urls import path
from django.views.decorators.cache import cache_page
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

import checkpoints.routes  # noqa: F401  (registers the `cid` path converter)
from checkpoints.api.views import annotations as ann
from checkpoints.api.views import checkpoints as cp
from checkpoints.api.views import jobs, retention, store
from checkpoints.api.views import langgraph as lg
from checkpoints.api.views import medallions as med
from checkpoints.api.views import messages as msg
from checkpoints.api.views import threads as th
from checkpoints.api.views.state import ThreadStateView

app_name = "api"

# The OpenAPI document changes only with a deploy; a new one is served within this many seconds of it.
SCHEMA_CACHE_SECONDS = 300
CHECKPOINT = "threads/<cid:thread_id>/checkpoints/<cid:checkpoint_id>/"

urlpatterns = [
    path("threads/<cid:thread_id>/state/", ThreadStateView.as_view(), name="thread-state"),
    path(
        "threads/<cid:thread_id>/checkpoints/", cp.ThreadCheckpointsView.as_view(), name="thread-checkpoints"
    ),
    path(CHECKPOINT, cp.CheckpointDetailView.as_view(), name="checkpoint-detail"),
    path(f"{CHECKPOINT}ttl/", cp.CheckpointTtlView.as_view(), name="checkpoint-ttl"),
    path(f"{CHECKPOINT}handoff/", cp.CheckpointHandoffView.as_view(), name="checkpoint-handoff"),
    path(f"{CHECKPOINT}diff/", cp.CheckpointDiffView.as_view(), name="checkpoint-diff"),
    path(f"{CHECKPOINT}lineage/", cp.CheckpointLineageView.as_view(), name="checkpoint-lineage"),
    path(f"{CHECKPOINT}writes/", cp.CheckpointWritesView.as_view(), name="checkpoint-writes"),
    path("checkpoints/", cp.WorkspaceCheckpointsView.as_view(), name="checkpoints"),
    path("checkpoints/<cid:checkpoint_id>/", cp.CheckpointByIdView.as_view(), name="checkpoint-by-id"),
    # Generating the document costs ~0.4 s of CPU and it is public: without the cache, a few clients asking
    # for it again and again keep every worker busy (docs/architecture.md, "Slow and hostile clients").
    path("schema/", cache_page(SCHEMA_CACHE_SECONDS)(SpectacularAPIView.as_view()), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
]

# Threads and messages (docs/threads.md).
THREAD = "threads/<cid:thread_id>/"
urlpatterns += [
    path("threads/", th.ThreadListView.as_view(), name="threads"),
    path(THREAD, th.ThreadDetailView.as_view(), name="thread-detail"),
    path(f"{THREAD}fork/", th.ThreadForkView.as_view(), name="thread-fork"),
    path(f"{THREAD}copy/", th.ThreadCopyView.as_view(), name="thread-copy"),
    path(f"{THREAD}prune/", th.ThreadPruneView.as_view(), name="thread-prune"),
    path(f"{THREAD}storage/", th.ThreadStorageView.as_view(), name="thread-storage"),
    path(f"{THREAD}messages/", msg.ThreadMessagesView.as_view(), name="thread-messages"),
    path(f"{THREAD}messages/<cid:message_id>/", msg.MessageDetailView.as_view(), name="message-detail"),
    path("messages/", msg.WorkspaceMessagesView.as_view(), name="messages"),
    path(f"{THREAD}annotations/", ann.ThreadAnnotationsView.as_view(), name="thread-annotations"),
    path(
        f"{THREAD}annotations/<uuid:annotation_id>/",
        ann.AnnotationDetailView.as_view(),
        name="annotation-detail",
    ),
]

# Jobs and retention (docs/retention.md).
urlpatterns += [
    path("jobs/", jobs.JobListView.as_view(), name="jobs"),
    path("jobs/<uuid:job_id>/", jobs.JobDetailView.as_view(), name="job-detail"),
    path("retention/", retention.RetentionPolicyView.as_view(), name="retention"),
    path("retention/preview/", retention.RetentionPreviewView.as_view(), name="retention-preview"),
    path("retention/sweep/", retention.RetentionSweepView.as_view(), name="retention-sweep"),
]

# LangGraph saver support for the SDK (docs/integrations/langgraph.md; checkpoints.services.langgraph).
urlpatterns += [
    path("langgraph/checkpoints/", lg.LangGraphCheckpointsView.as_view(), name="langgraph-checkpoints"),
    path(
        "langgraph/threads/<cid:thread_id>/checkpoints/",
        lg.LangGraphCheckpointSaveView.as_view(),
        name="langgraph-checkpoint-save",
    ),
    path(
        "langgraph/threads/<cid:thread_id>/writes/", lg.LangGraphWritesView.as_view(), name="langgraph-writes"
    ),
    path("langgraph/runs/delete/", lg.LangGraphRunsDeleteView.as_view(), name="langgraph-runs-delete"),
]
# Medallions (docs/medallions.md).
urlpatterns += [
    path("medallions/", med.MedallionListView.as_view(), name="medallions"),
    path("medallions/checkpoint/", med.MedallionCheckpointView.as_view(), name="medallion-checkpoint"),
    path("medallions/search/", med.MedallionSearchView.as_view(), name="medallion-search"),
    path("medallions/<str:medallion_id>/", med.MedallionDetailView.as_view(), name="medallion-detail"),
    path(
        "medallions/<str:medallion_id>/revisions/",
        med.MedallionRevisionsView.as_view(),
        name="medallion-revisions",
    ),
    path("threads/<cid:thread_id>/summarize/", med.ThreadSummarizeView.as_view(), name="thread-summarize"),
]

# The LangGraph store: the Agent Protocol's routes (no trailing slash, as the protocol and langgraph-sdk
# spell them) and Cairn's batch route (docs/store.md).
urlpatterns += [
    path("store/items", store.StoreItemsView.as_view(), name="store-items"),
    path("store/items/search", store.StoreSearchView.as_view(), name="store-items-search"),
    path("store/namespaces", store.StoreNamespacesView.as_view(), name="store-namespaces"),
    path("store/batch/", store.StoreBatchView.as_view(), name="store-batch"),
]
