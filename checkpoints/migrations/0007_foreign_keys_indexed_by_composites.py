# Single-column foreign-key indexes that composite indexes already lead with (docs/architecture.md). Only the
# indexes are dropped: Django's own AlterField would also drop and re-validate each foreign key, a full scan
# of the table under lock.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('checkpoints', '0006_bench_medallion_scope_index'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "checkpoints_checkpoint_thread_id_1a7bcdea"',
                    reverse_sql='CREATE INDEX "checkpoints_checkpoint_thread_id_1a7bcdea" ON "checkpoints_checkpoint" ("thread_id")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "checkpoints_checkpoint_workspace_id_6da34bc4"',
                    reverse_sql='CREATE INDEX "checkpoints_checkpoint_workspace_id_6da34bc4" ON "checkpoints_checkpoint" ("workspace_id")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "checkpoints_message_thread_id_0ef7165a"',
                    reverse_sql='CREATE INDEX "checkpoints_message_thread_id_0ef7165a" ON "checkpoints_message" ("thread_id")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "checkpoints_pendingwrite_thread_id_4ea33ac2"',
                    reverse_sql='CREATE INDEX "checkpoints_pendingwrite_thread_id_4ea33ac2" ON "checkpoints_pendingwrite" ("thread_id")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "checkpoints_thread_workspace_id_51cd7fb3"',
                    reverse_sql='CREATE INDEX "checkpoints_thread_workspace_id_51cd7fb3" ON "checkpoints_thread" ("workspace_id")',
                ),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='checkpoint',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='checkpoints', to='checkpoints.thread'),
                ),
                migrations.AlterField(
                    model_name='checkpoint',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='checkpoints.workspace'),
                ),
                migrations.AlterField(
                    model_name='message',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='checkpoints.thread'),
                ),
                migrations.AlterField(
                    model_name='pendingwrite',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='pending_writes', to='checkpoints.thread'),
                ),
                migrations.AlterField(
                    model_name='thread',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='threads', to='checkpoints.workspace'),
                ),
            ],
        ),
    ]
