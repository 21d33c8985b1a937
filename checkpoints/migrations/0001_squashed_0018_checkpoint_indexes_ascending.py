"""Cairn's schema as of 2026-12-02, in one migration: the eighteen before it, squashed (docs/operating.md,
"Upgrades and migrations"). A database that applied all eighteen takes this one as applied; one that
stopped part way is refused by the `cairn.E001` check (`checkpoints/checks.py`) until a release of
2026-12-02 or earlier has migrated it to the end of the eighteen.

Django's operations build every table, index and constraint the models declare. The vendor operations at
the end add what the models cannot say (docs/storage.md, "Indexes"):

- PostgreSQL: GIN indexes for JSON containment and trigram `LIKE` searches, the checkpoint table's taking
  their entries at once (`fastupdate` off: their pending lists grew with every save, and the save that
  crossed the limit merged the whole list); a fill factor of 70 on the thread table, which leaves each
  page room for a save's HOT update; lz4 compression for the large text columns where the server was
  built with it (otherwise pglz stays).
- SQLite: an external-content FTS5 trigram table over the messages' search text, kept by triggers. A
  later migration that makes Django rebuild `checkpoints_message` drops them and must create them again
  (`tests/services/test_messages_search.py` fails if they are missing).
"""

import checkpoints.ids
import checkpoints.models.thread
import django.db.models.deletion
import django.db.models.functions.text
import django.db.models.lookups
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from checkpoints.migration_ops import VendorSQL

FTS = "checkpoints_message_fts"
LZ4_COLUMNS = (
    ("checkpoints_checkpoint", "state"),
    ("checkpoints_checkpoint", "context"),
    ("checkpoints_checkpoint", "metadata"),
    ("checkpoints_storedvalue", "body"),
    ("checkpoints_pendingwrite", "value"),
)
# name -> (table, columns and operator class, the column a partial index leaves out when NULL)
GIN_INDEXES = {
    "checkpoint_metadata_gin": ("checkpoints_checkpoint", "(((metadata)::jsonb) jsonb_path_ops)", "metadata"),
    "checkpoint_step_name_trgm": ("checkpoints_checkpoint", "((upper((step_name)::text)) gin_trgm_ops)", "step_name"),
    "medallion_scope_gin": ("checkpoints_medallion", "(graph_nodes, tags)", None),
    "message_search_trgm": ("checkpoints_message", "(search_text gin_trgm_ops)", None),
    "thread_id_trgm": ("checkpoints_thread", "((upper((thread_id)::text)) gin_trgm_ops)", None),
    "thread_name_trgm": ("checkpoints_thread", "((upper((name)::text)) gin_trgm_ops)", None),
    "thread_tags_gin": ("checkpoints_thread", "(tags)", None),
}


def _gin_index(name: str) -> str:
    table, columns, not_null = GIN_INDEXES[name]
    sql = f"CREATE INDEX {name} ON {table} USING gin {columns}"
    if table == "checkpoints_checkpoint":
        sql += " WITH (fastupdate = off)"
    return f"{sql} WHERE {not_null} IS NOT NULL" if not_null else sql


def _compression(method: str) -> str:
    statements = " ".join(
        f"EXECUTE 'ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}';"
        for table, column in LZ4_COLUMNS
    )
    return (
        f"DO $$ BEGIN {statements} "
        "EXCEPTION WHEN feature_not_supported THEN RAISE NOTICE 'lz4 is not available; pglz kept'; END $$"
    )


VENDOR_OPERATIONS = [
    VendorSQL("postgresql", "CREATE EXTENSION IF NOT EXISTS pg_trgm"),
    *(
        VendorSQL("postgresql", _gin_index(name), f"DROP INDEX IF EXISTS {name}")
        for name in GIN_INDEXES
    ),
    VendorSQL(
        "postgresql",
        "ALTER TABLE checkpoints_thread SET (fillfactor = 70)",
        "ALTER TABLE checkpoints_thread RESET (fillfactor)",
    ),
    VendorSQL("postgresql", _compression("lz4"), _compression("pglz")),
    VendorSQL(
        "sqlite",
        [
            f"CREATE VIRTUAL TABLE {FTS} USING fts5(search_text, content='checkpoints_message', "
            "content_rowid='id', tokenize='trigram case_sensitive 1')",
            f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON checkpoints_message BEGIN "
            f"INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text); END",
            f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON checkpoints_message BEGIN "
            f"INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text); END",
            f"CREATE TRIGGER {FTS}_update AFTER UPDATE OF search_text ON checkpoints_message BEGIN "
            f"INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text); "
            f"INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text); END",
        ],
        [
            f"DROP TRIGGER IF EXISTS {FTS}_insert",
            f"DROP TRIGGER IF EXISTS {FTS}_delete",
            f"DROP TRIGGER IF EXISTS {FTS}_update",
            f"DROP TABLE IF EXISTS {FTS}",
        ],
    ),
]

REPLACED = [
    "0001_initial",
    "0002_postgres_gin_indexes",
    "0003_threads_message_search",
    "0004_thread_id_trgm",
    "0005_workspace_tombstone_retention_optional",
    "0006_bench_medallion_scope_index",
    "0007_foreign_keys_indexed_by_composites",
    "0008_dashboard_search",
    "0009_audit_agent",
    "0010_dashboard_activity_indexes",
    "0011_checkpoint_written_by",
    "0012_stored_values",
    "0013_checkpoint_ws_expired",
    "0014_store_items",
    "0015_medallion_vectors",
    "0016_index_diet",
    "0017_annotations",
    "0018_checkpoint_indexes_ascending",
]


class Migration(migrations.Migration):

    initial = True
    replaces = [("checkpoints", name) for name in REPLACED]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('prefix', models.CharField(max_length=16, unique=True)),
                ('secret_hash', models.CharField(max_length=64)),
                ('scope', models.CharField(choices=[('read', 'Read'), ('write', 'Write'), ('admin', 'Admin')], default='write', max_length=8)),
                ('throttle_rate', models.CharField(blank=True, help_text='Overrides the default rate for this key, e.g. "100/s" or "6000/min".', max_length=32)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='AuditEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_type', models.CharField(choices=[('user', 'User'), ('api_key', 'Api Key'), ('system', 'System')], max_length=16)),
                ('actor_label', models.CharField(max_length=255)),
                ('action', models.CharField(max_length=64)),
                ('target_type', models.CharField(blank=True, default='', max_length=64)),
                ('target_id', models.CharField(blank=True, default='', max_length=512)),
                ('details', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('actor_api_key', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='checkpoints.apikey')),
                ('actor_user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.CreateModel(
            name='Workspace',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.SlugField(max_length=64, unique=True)),
                ('name', models.CharField(max_length=200)),
                ('default_ttl_seconds', models.PositiveBigIntegerField(blank=True, help_text='TTL given to checkpoints saved without one.', null=True)),
                ('keep_latest', models.PositiveIntegerField(blank=True, help_text='Keep only the newest N live checkpoints per thread and namespace.', null=True)),
                ('thread_idle_ttl_seconds', models.PositiveBigIntegerField(blank=True, help_text='Delete threads (not pinned) idle for longer than this.', null=True)),
                ('tombstone_retention_seconds', models.PositiveBigIntegerField(blank=True, default=2592000, help_text='Hard-delete tombstones older than this; empty keeps them forever (a full audit trail).', null=True)),
                ('auto_summarize_every', models.PositiveIntegerField(blank=True, help_text='Summarise a thread into its medallion after every N new messages.', null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
            ],
            options={
                'ordering': ['slug'],
                'constraints': [models.CheckConstraint(condition=models.Q(('default_ttl_seconds__isnull', True), ('default_ttl_seconds__gt', 0), _connector='OR'), name='workspace_default_ttl_positive'), models.CheckConstraint(condition=models.Q(('keep_latest__isnull', True), ('keep_latest__gt', 0), _connector='OR'), name='workspace_keep_latest_positive'), models.CheckConstraint(condition=models.Q(('thread_idle_ttl_seconds__isnull', True), ('thread_idle_ttl_seconds__gt', 0), _connector='OR'), name='workspace_idle_ttl_positive'), models.CheckConstraint(condition=models.Q(('tombstone_retention_seconds__isnull', True), ('tombstone_retention_seconds__gt', 0), _connector='OR'), name='workspace_tombstone_retention_positive')],
            },
        ),
        migrations.CreateModel(
            name='Thread',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('thread_id', models.CharField(max_length=128)),
                ('user_id', models.CharField(blank=True, default='', help_text='The end user; free string.', max_length=255)),
                ('name', models.CharField(blank=True, default='', max_length=255)),
                ('tags', models.JSONField(blank=True, default=list)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('scope', models.JSONField(blank=True, default=checkpoints.models.thread.empty_scope, help_text='Medallion scope for summaries.')),
                ('ttl_seconds', models.PositiveBigIntegerField(blank=True, help_text='Idle expiry.', null=True)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('pinned', models.BooleanField(default=False)),
                ('forked_from_checkpoint_id', models.CharField(blank=True, default='', max_length=128)),
                ('forked_from_namespace', models.CharField(blank=True, default='', max_length=255)),
                ('last_message_seq', models.BigIntegerField(default=0)),
                ('last_summarized_seq', models.BigIntegerField(default=0)),
                ('state_version', models.BigIntegerField(default=0)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('forked_from', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='forks', to='checkpoints.thread')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='threads', to='checkpoints.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='StoreItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('namespace', models.CharField(max_length=1024)),
                ('key', models.CharField(max_length=1024)),
                ('value', models.JSONField()),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('ttl_minutes', models.FloatField(blank=True, null=True)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('vectors', models.BinaryField(blank=True, null=True)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='checkpoints.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='StoredValue',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('digest', models.BinaryField(max_length=32)),
                ('body', models.TextField()),
                ('size_bytes', models.BigIntegerField()),
                ('used_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='checkpoints.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='Membership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='checkpoints.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='Medallion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('medallion_id', models.UUIDField(default=checkpoints.ids.uuid7, editable=False, unique=True)),
                ('graph_nodes', models.JSONField(default=list)),
                ('tags', models.JSONField(default=list)),
                ('scope_key', models.CharField(max_length=64)),
                ('schema_version', models.CharField(default='medallion.v1', max_length=32)),
                ('model', models.CharField(blank=True, default='', max_length=255)),
                ('status', models.CharField(choices=[('active', 'Active'), ('stale', 'Stale'), ('superseded', 'Superseded')], default='active', max_length=16)),
                ('version', models.PositiveIntegerField(default=1)),
                ('high_level', models.CharField(max_length=300)),
                ('subsystems', models.JSONField(blank=True, default=list)),
                ('decisions', models.JSONField(blank=True, default=list)),
                ('open_questions', models.JSONField(blank=True, default=list)),
                ('affordances', models.JSONField(blank=True, default=dict)),
                ('knowledge_min_ts', models.DateTimeField(blank=True, null=True)),
                ('knowledge_max_ts', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('vector', models.BinaryField(blank=True, null=True)),
                ('source_thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='medallions', to='checkpoints.thread')),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='medallions', to='checkpoints.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='Job',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('job_id', models.UUIDField(default=checkpoints.ids.uuid7, editable=False, unique=True)),
                ('kind', models.CharField(choices=[('summarize', 'Summarize'), ('sweep', 'Sweep'), ('prune', 'Prune'), ('export', 'Export'), ('pack', 'Pack')], max_length=16)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed')], default='queued', max_length=16)),
                ('params', models.JSONField(blank=True, default=dict)),
                ('result', models.JSONField(blank=True, null=True)),
                ('error', models.TextField(blank=True, default='')),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('celery_task_id', models.CharField(blank=True, default='', max_length=255)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='checkpoints.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='Checkpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('namespace', models.CharField(blank=True, default='', max_length=255)),
                ('checkpoint_id', models.CharField(max_length=128)),
                ('parent_checkpoint_id', models.CharField(blank=True, max_length=128, null=True)),
                ('agent_id', models.CharField(max_length=255)),
                ('framework', models.CharField(choices=[('langgraph', 'Langgraph'), ('crewai', 'Crewai'), ('autogen', 'Autogen'), ('custom', 'Custom')], default='custom', max_length=16)),
                ('schema_version', models.CharField(default='1.0', max_length=32)),
                ('step_index', models.BigIntegerField(default=0)),
                ('step_name', models.CharField(blank=True, max_length=255, null=True)),
                ('run_id', models.CharField(blank=True, max_length=255, null=True)),
                ('state', models.TextField(blank=True, null=True)),
                ('context', models.TextField(blank=True, null=True)),
                ('metadata', models.TextField(blank=True, null=True)),
                ('handoff_target', models.CharField(blank=True, max_length=255, null=True)),
                ('handoff_from', models.CharField(blank=True, max_length=255, null=True)),
                ('written_by', models.CharField(blank=True, default='', max_length=160)),
                ('message_seq', models.BigIntegerField(default=0)),
                ('checksum', models.CharField(max_length=64)),
                ('size_bytes', models.BigIntegerField(default=0)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('pinned', models.BooleanField(default=False)),
                ('expired_at', models.DateTimeField(blank=True, help_text='Set when the row became a tombstone.', null=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='checkpoints', to='checkpoints.thread')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='checkpoints.workspace')),
            ],
            options={
                'base_manager_name': 'objects',
            },
        ),
        migrations.CreateModel(
            name='AuditEventAgent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('agent_id', models.CharField(max_length=255)),
                ('event', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='agents', to='checkpoints.auditevent')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='checkpoints.workspace')),
            ],
        ),
        migrations.AddField(
            model_name='auditevent',
            name='workspace',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='audit_events', to='checkpoints.workspace'),
        ),
        migrations.AddField(
            model_name='apikey',
            name='workspace',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='checkpoints.workspace'),
        ),
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
        ),
        migrations.CreateModel(
            name='MedallionRevision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('version', models.PositiveIntegerField()),
                ('status', models.CharField(choices=[('active', 'Active'), ('stale', 'Stale'), ('superseded', 'Superseded')], max_length=16)),
                ('content', models.JSONField(help_text='The full medallion document at this version.')),
                ('evidence', models.JSONField(blank=True, null=True)),
                ('model', models.CharField(blank=True, default='', max_length=255)),
                ('actor_label', models.CharField(blank=True, default='', max_length=255)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('job', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='checkpoints.job')),
                ('medallion', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='revisions', to='checkpoints.medallion')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('medallion', 'version'), name='medallion_revision_unique_version')],
            },
        ),
        migrations.CreateModel(
            name='PendingWrite',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('namespace', models.CharField(blank=True, default='', max_length=255)),
                ('checkpoint_id', models.CharField(max_length=128)),
                ('task_id', models.CharField(max_length=255)),
                ('task_path', models.CharField(blank=True, default='', max_length=1024)),
                ('idx', models.IntegerField()),
                ('channel', models.CharField(max_length=255)),
                ('type', models.CharField(blank=True, default='', max_length=64)),
                ('value', models.TextField(help_text='Canonical JSON of the written value.')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='pending_writes', to='checkpoints.thread')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('thread', 'namespace', 'checkpoint_id', 'task_id', 'idx'), name='pending_write_unique')],
            },
        ),
        migrations.CreateModel(
            name='Message',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.BigIntegerField()),
                ('message_id', models.CharField(max_length=128)),
                ('role', models.CharField(choices=[('system', 'System'), ('user', 'User'), ('assistant', 'Assistant'), ('tool', 'Tool')], max_length=16)),
                ('content', models.TextField(blank=True, default='')),
                ('content_blocks', models.JSONField(blank=True, null=True)),
                ('tool_calls', models.JSONField(blank=True, null=True)),
                ('tool_call_id', models.CharField(blank=True, default='', max_length=128)),
                ('name', models.CharField(blank=True, default='', max_length=255)),
                ('usage', models.JSONField(blank=True, null=True)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('search_text', models.TextField(blank=True, default='', editable=False)),
                ('size_bytes', models.BigIntegerField(default=0)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='checkpoints.thread')),
            ],
            options={
                'indexes': [models.Index(fields=['created_at'], name='message_created')],
                'constraints': [models.UniqueConstraint(fields=('thread', 'seq'), name='message_unique_seq'), models.UniqueConstraint(fields=('thread', 'message_id'), name='message_unique_id')],
            },
        ),
        migrations.AddIndex(
            model_name='thread',
            index=models.Index(fields=['workspace', '-created_at', '-id'], name='thread_ws_created'),
        ),
        migrations.AddIndex(
            model_name='thread',
            index=models.Index(fields=['workspace', 'user_id'], name='thread_ws_user'),
        ),
        migrations.AddIndex(
            model_name='thread',
            index=models.Index(condition=models.Q(('expires_at__isnull', False), ('pinned', False)), fields=['expires_at'], name='thread_expiring'),
        ),
        migrations.AddConstraint(
            model_name='thread',
            constraint=models.UniqueConstraint(fields=('workspace', 'thread_id'), name='thread_unique_id'),
        ),
        migrations.AddConstraint(
            model_name='thread',
            constraint=models.CheckConstraint(condition=models.Q(('ttl_seconds__isnull', True), ('ttl_seconds__gt', 0), _connector='OR'), name='thread_ttl_positive'),
        ),
        migrations.AddIndex(
            model_name='storeitem',
            index=models.Index(fields=['workspace', '-updated_at'], name='store_item_ws_updated'),
        ),
        migrations.AddIndex(
            model_name='storeitem',
            index=models.Index(fields=['expires_at'], name='store_item_expires'),
        ),
        migrations.AddConstraint(
            model_name='storeitem',
            constraint=models.UniqueConstraint(fields=('workspace', 'namespace', 'key'), name='store_item_unique'),
        ),
        migrations.AddConstraint(
            model_name='storeitem',
            constraint=models.CheckConstraint(condition=models.Q(('ttl_minutes__isnull', True), ('ttl_minutes__gt', 0), _connector='OR'), name='store_item_ttl_positive'),
        ),
        migrations.AddIndex(
            model_name='storedvalue',
            index=models.Index(fields=['workspace', 'used_at'], name='storedvalue_ws_used'),
        ),
        migrations.AddConstraint(
            model_name='storedvalue',
            constraint=models.UniqueConstraint(fields=('workspace', 'digest'), name='storedvalue_unique_digest'),
        ),
        migrations.AddConstraint(
            model_name='membership',
            constraint=models.UniqueConstraint(fields=('workspace', 'user'), name='membership_unique'),
        ),
        migrations.AddIndex(
            model_name='medallion',
            index=models.Index(fields=['workspace', 'status', '-updated_at', '-id'], name='medallion_ws_status_updated'),
        ),
        migrations.AddIndex(
            model_name='medallion',
            index=models.Index(fields=['workspace', 'scope_key'], name='medallion_ws_scope'),
        ),
        migrations.AddConstraint(
            model_name='medallion',
            constraint=models.UniqueConstraint(condition=models.Q(('status', 'active')), fields=('workspace', 'scope_key'), name='medallion_one_active_per_scope'),
        ),
        migrations.AddConstraint(
            model_name='medallion',
            constraint=models.CheckConstraint(condition=models.Q(('updated_at__gte', models.F('created_at'))), name='medallion_updated_after_created'),
        ),
        migrations.AddConstraint(
            model_name='medallion',
            constraint=models.CheckConstraint(condition=models.Q(('version__gte', 1)), name='medallion_version_positive'),
        ),
        migrations.AddIndex(
            model_name='job',
            index=models.Index(fields=['workspace', '-id'], name='job_ws_newest'),
        ),
        migrations.AddIndex(
            model_name='job',
            index=models.Index(fields=['workspace', 'created_at'], name='job_ws_created'),
        ),
        migrations.AddIndex(
            model_name='job',
            index=models.Index(fields=['workspace', 'status', '-id'], name='job_ws_status'),
        ),
        migrations.AddIndex(
            model_name='job',
            index=models.Index(fields=['status', 'started_at'], name='job_status_started'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(condition=models.Q(('expired_at__isnull', True)), fields=['thread', 'namespace', 'id'], name='checkpoint_head'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(fields=['thread', 'id'], name='checkpoint_thread_timeline'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(fields=['workspace', 'id'], name='checkpoint_ws_timeline'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(fields=['workspace', 'created_at'], name='checkpoint_ws_created'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(fields=['workspace', 'agent_id', 'id'], name='checkpoint_ws_agent'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(condition=models.Q(('handoff_target__isnull', False)), fields=['workspace', 'handoff_target', 'id'], name='checkpoint_ws_inbox'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(fields=['workspace', 'checkpoint_id'], name='checkpoint_ws_public_id'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(condition=models.Q(('run_id__isnull', False)), fields=['workspace', 'run_id'], name='checkpoint_ws_run'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(condition=models.Q(('expired_at__isnull', True), ('expires_at__isnull', False), ('pinned', False)), fields=['expires_at'], name='checkpoint_expiring'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(condition=models.Q(('expired_at__isnull', False)), fields=['expired_at'], name='checkpoint_tombstones'),
        ),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(condition=models.Q(('expired_at__isnull', False)), fields=['workspace', 'expired_at'], name='checkpoint_ws_expired'),
        ),
        migrations.AddConstraint(
            model_name='checkpoint',
            constraint=models.UniqueConstraint(fields=('thread', 'namespace', 'checkpoint_id'), name='checkpoint_unique_id'),
        ),
        migrations.AddIndex(
            model_name='auditeventagent',
            index=models.Index(fields=['workspace', 'agent_id', '-event'], name='audit_agent_ws'),
        ),
        migrations.AddConstraint(
            model_name='auditeventagent',
            constraint=models.UniqueConstraint(fields=('event', 'agent_id'), name='audit_agent_unique'),
        ),
        migrations.AddIndex(
            model_name='auditevent',
            index=models.Index(fields=['workspace', '-id'], name='audit_ws_newest'),
        ),
        migrations.AddIndex(
            model_name='auditevent',
            index=models.Index(fields=['workspace', 'action', '-id'], name='audit_ws_action'),
        ),
        migrations.AddIndex(
            model_name='apikey',
            index=models.Index(fields=['workspace', '-created_at'], name='apikey_ws_created'),
        ),
        migrations.AddIndex(
            model_name='annotation',
            index=models.Index(fields=['thread', '-created_at', '-id'], name='annotation_thread_newest'),
        ),
        migrations.AddIndex(
            model_name='annotation',
            index=models.Index(fields=['workspace', 'verdict', 'checkpoint'], name='annotation_ws_verdict'),
        ),
        migrations.AddConstraint(
            model_name='annotation',
            constraint=models.CheckConstraint(condition=models.Q(('verdict__in', ['', 'correct', 'wrong', 'needs_review'])), name='annotation_verdict_known'),
        ),
        migrations.AddConstraint(
            model_name='annotation',
            constraint=models.CheckConstraint(condition=models.Q(django.db.models.lookups.GreaterThanOrEqual(django.db.models.functions.text.Length('comment'), 1), django.db.models.lookups.LessThanOrEqual(django.db.models.functions.text.Length('comment'), 5000)), name='annotation_comment_length'),
        ),
        *VENDOR_OPERATIONS,
    ]
