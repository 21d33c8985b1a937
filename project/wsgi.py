"""WSGI entry point (gunicorn project.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()

# Build the table of documented query parameters (from the OpenAPI document, ~0.3 s) before the first request
# rather than during it.
from checkpoints.api.query_params import documented_query_parameters  # noqa: E402

documented_query_parameters()
