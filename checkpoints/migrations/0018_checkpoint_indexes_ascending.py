"""The checkpoint indexes that end in the row id hold it ascending (docs/storage.md, "Indexes").

Read backwards they serve the same newest-first queries. In descending order a new row, the newest of its
thread or workspace, went to the left of its group, and each full page split in half; ascending, it goes to
the rightmost page, which PostgreSQL splits leaving it full: about half the pages for the same entries.
Each index is dropped and built again, so writes to the checkpoint table wait while this runs.
"""

from django.db import migrations, models
from django.db.models import Q

# name -> (columns, condition)
ASCENDING = {
    "checkpoint_head": (["thread", "namespace", "id"], Q(expired_at__isnull=True)),
    "checkpoint_thread_timeline": (["thread", "id"], None),
    "checkpoint_ws_timeline": (["workspace", "id"], None),
    "checkpoint_ws_agent": (["workspace", "agent_id", "id"], None),
    "checkpoint_ws_inbox": (["workspace", "handoff_target", "id"], Q(handoff_target__isnull=False)),
}


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0017_annotations")]

    operations = [
        *(migrations.RemoveIndex(model_name="checkpoint", name=name) for name in ASCENDING),
        *(
            migrations.AddIndex(
                model_name="checkpoint", index=models.Index(fields=fields, name=name, condition=condition)
            )
            for name, (fields, condition) in ASCENDING.items()
        ),
    ]
