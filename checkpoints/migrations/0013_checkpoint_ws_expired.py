"""The overview's storage chart sums the bytes a workspace's checkpoints lost per day by `expired_at`: an
index on (workspace, expired_at) over tombstones, so that window is read without a scan."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0012_stored_values")]

    operations = [
        migrations.AddIndex(
            model_name="checkpoint",
            index=models.Index(
                fields=["workspace", "expired_at"],
                name="checkpoint_ws_expired",
                condition=models.Q(expired_at__isnull=False),
            ),
        ),
    ]
