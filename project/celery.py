"""The Celery app (official Django recipe). Configuration lives in settings under the CELERY_ prefix."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

app = Celery("cairn")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _ensure_filesystem_broker_folders(sender: Celery, **kwargs: object) -> None:
    """The embedded filesystem transport needs its folders to exist before the first publish, and beat
    its schedule file's folder (CAIRN_DATA_DIR), whichever broker is used."""
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
    if sender.conf.beat_schedule_filename:
        Path(sender.conf.beat_schedule_filename).parent.mkdir(parents=True, exist_ok=True)
