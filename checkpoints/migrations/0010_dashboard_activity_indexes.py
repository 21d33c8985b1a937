"""The overview's activity and storage charts group one time window of a workspace by hour or day: indexes
on (workspace, created_at) for checkpoints and jobs, and on created_at for messages (which reach their
workspace through their thread)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0009_audit_agent")]

    operations = [
        migrations.AddIndex(
            model_name="checkpoint",
            index=models.Index(fields=["workspace", "created_at"], name="checkpoint_ws_created"),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["workspace", "created_at"], name="job_ws_created"),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["created_at"], name="message_created"),
        ),
    ]
