from __future__ import annotations

from django.apps import AppConfig


class CheckpointsConfig(AppConfig):
    name = "checkpoints"
    verbose_name = "Cairn"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The tasks register by name, which is how the services send them (`job_submit`).
        from checkpoints import after_response, checks, tasks  # noqa: F401
        from checkpoints.services import login_throttle  # noqa: F401  # its audit receiver
        from checkpoints.storage import api_key_cache

        api_key_cache.connect_signals()
        after_response.connect_signals()
