from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("checkpoints", "0014_store_items"),
    ]

    operations = [
        migrations.AddField(
            model_name="medallion",
            name="vector",
            field=models.BinaryField(blank=True, editable=False, null=True),
        ),
    ]
