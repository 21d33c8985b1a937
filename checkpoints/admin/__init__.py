"""The Django admin for every model. Importing this package registers them (Django autodiscovers it)."""

from django.contrib import admin

from checkpoints.admin import accounts, activity, checkpoints, medallions, threads, workspaces
from checkpoints.dashboard.login_form import ThrottledLoginForm

# The admin signs in through the same throttled form as the dashboard.
admin.site.login_form = ThrottledLoginForm

__all__ = ["accounts", "activity", "checkpoints", "medallions", "threads", "workspaces"]
