from __future__ import annotations

from django.apps import AppConfig


class CheckpointsConfig(AppConfig):
    name = "checkpoints"
    verbose_name = "Cairn"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from checkpoints import after_response
        from checkpoints.services import api_key_cache

        api_key_cache.connect_signals()
        after_response.connect_signals()
