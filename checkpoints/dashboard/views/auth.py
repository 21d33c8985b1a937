"""Login and logout. Only active staff accounts may log in (the admin's own rule), behind the sign-in
throttle."""

from __future__ import annotations

from django.contrib.auth import views as auth_views

from checkpoints.dashboard.login_form import ThrottledLoginForm

login = auth_views.LoginView.as_view(
    template_name="checkpoints/dashboard/login.html",
    authentication_form=ThrottledLoginForm,
    redirect_authenticated_user=True,
    extra_context={"title": "Sign in"},
)
logout = auth_views.LogoutView.as_view()
