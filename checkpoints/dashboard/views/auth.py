"""Login and logout. Only active staff accounts may log in (the admin's own rule and form)."""

from __future__ import annotations

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views

login = auth_views.LoginView.as_view(
    template_name="checkpoints/dashboard/login.html",
    authentication_form=AdminAuthenticationForm,
    redirect_authenticated_user=True,
    extra_context={"title": "Sign in"},
)
logout = auth_views.LogoutView.as_view()
