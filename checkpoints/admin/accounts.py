"""Django's own user and group admins, with the changelist guard every Cairn admin has (docs/admin.md)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import admin as auth_admin
from django.contrib.auth.models import Group, User

from checkpoints.admin.changelist import FilterGuardMixin

admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class UserAdmin(FilterGuardMixin, auth_admin.UserAdmin):
    pass


@admin.register(Group)
class GroupAdmin(FilterGuardMixin, auth_admin.GroupAdmin):
    pass
