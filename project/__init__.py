"""The Django project. Exposes the Celery app so `@shared_task` binds to it (official Django recipe)."""

from project.celery import app as celery_app

__all__ = ("celery_app",)
