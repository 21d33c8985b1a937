"""WSGI entry point (gunicorn project.wsgi)."""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()

# Fill each view's table of accepted query parameters before the first request rather than during it.
from checkpoints.api.query_params import query_parameter_table  # noqa: E402

query_parameter_table()

# What is loaded by now (Django, the models, the URL table: ~130,000 objects) lives as long as the process.
# Freezing it keeps the collector's full passes from walking it again: each took ~70 ms, every few thousand
# requests (docs/performance.md).
gc.collect()
gc.freeze()
