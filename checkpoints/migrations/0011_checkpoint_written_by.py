"""Who wrote each checkpoint (`written_by`: "key:<prefix>" or "user:<username>"; "" for older rows), with an
index for the timeline's `?written_by=` filter. Adding a column with a constant default rewrites no rows on
PostgreSQL 11+."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("checkpoints", "0010_dashboard_activity_indexes")]

    operations = [
        migrations.AddField(
            model_name="checkpoint",
            name="written_by",
            field=models.CharField(blank=True, default="", max_length=160),
        ),
        migrations.AddIndex(
            model_name="checkpoint",
            index=models.Index(fields=["workspace", "written_by", "-id"], name="checkpoint_ws_writer"),
        ),
    ]
