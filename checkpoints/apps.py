from __future__ import annotations

from django.apps import AppConfig


class CheckpointsConfig(AppConfig):
    name = "checkpoints"
    verbose_name = "Cairn"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from checkpoints.services.api_key_cache import connect_signals

        connect_signals()
