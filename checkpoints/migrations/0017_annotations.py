"""Annotations: findings on checkpoints and threads (docs/dashboard.md, "Findings")."""

import checkpoints.ids
import django.db.models.deletion
import django.db.models.functions.text
import django.db.models.lookups
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('checkpoints', '0016_index_diet'),
    ]

    operations = [
        migrations.CreateModel(
            name='Annotation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('annotation_id', models.UUIDField(default=checkpoints.ids.uuid7, editable=False, unique=True)),
                ('comment', models.TextField(max_length=5000)),
                ('verdict', models.CharField(blank=True, choices=[('correct', 'Correct'), ('wrong', 'Wrong'), ('needs_review', 'Needs Review')], default='', max_length=16)),
                ('actor_type', models.CharField(choices=[('user', 'User'), ('api_key', 'Api Key'), ('system', 'System')], max_length=16)),
                ('actor_label', models.CharField(max_length=255)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('checkpoint', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='annotations', to='checkpoints.checkpoint')),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='annotations', to='checkpoints.thread')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='annotations', to='checkpoints.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['thread', '-created_at', '-id'], name='annotation_thread_newest'), models.Index(fields=['workspace', 'verdict', 'checkpoint'], name='annotation_ws_verdict')],
                'constraints': [models.CheckConstraint(condition=models.Q(('verdict__in', ['', 'correct', 'wrong', 'needs_review'])), name='annotation_verdict_known'), models.CheckConstraint(condition=models.Q(django.db.models.lookups.GreaterThanOrEqual(django.db.models.functions.text.Length('comment'), 1), django.db.models.lookups.LessThanOrEqual(django.db.models.functions.text.Length('comment'), 5000)), name='annotation_comment_length')],
            },
        ),
    ]
