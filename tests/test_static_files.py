"""Static files are served by the application itself (WhiteNoise), so gunicorn needs no proxy for them."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.parametrize(
    "path",
    ["/static/checkpoints/dashboard.css", "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css"],
)
def test_it_serves_dashboard_and_api_docs_assets_without_debug(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert b"{" in body and len(body) > 1000  # real CSS, not an error page
    assert response["Content-Type"].startswith("text/css")
