"""The Django admin for every model. Importing this package registers them (Django autodiscovers it)."""

from checkpoints.admin import activity, checkpoints, medallions, threads, workspaces

__all__ = ["activity", "checkpoints", "medallions", "threads", "workspaces"]
