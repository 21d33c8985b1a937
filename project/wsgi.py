"""WSGI entry point (gunicorn project.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()

# Fill each view's table of accepted query parameters before the first request rather than during it.
from checkpoints.api.query_params import query_parameter_table  # noqa: E402

query_parameter_table()
