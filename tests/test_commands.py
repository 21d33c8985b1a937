"""`manage.py create_api_key` and `manage.py verify_integrity`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from checkpoints.models import ApiKey, AuditEvent, Checkpoint, Workspace
from tests.factories import WorkspaceFactory, make_checkpoint

pytestmark = pytest.mark.django_db


def _create_key(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("create_api_key", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _client(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_it_creates_the_workspace_and_prints_the_key_alone_on_the_last_line() -> None:
    out, err = _create_key("--workspace", "newco", "--name", "ci")
    lines = out.splitlines()
    secret = lines[-1]
    assert lines == [secret]
    assert secret.startswith("cairn_") and " " not in secret
    assert "Created workspace 'newco'." in err and "newco" in err
    key = ApiKey.objects.get(workspace__slug="newco")
    assert (key.name, key.scope, key.throttle_rate) == ("ci", "write", "")
    assert secret not in (key.secret_hash, key.prefix)
    assert AuditEvent.objects.filter(action="apikey.create", target_id=key.prefix).count() == 1


def test_it_creates_a_key_that_works_against_the_api() -> None:
    secret = _create_key("--workspace", "newco")[0].splitlines()[-1]
    client = _client(secret)
    saved = client.post(
        "/api/v1/threads/t1/checkpoints/", {"agent_id": "a", "state": {"ok": True}}, format="json"
    )
    assert saved.status_code == 201
    assert client.get("/api/v1/threads/t1/state/").json()["state"] == {"ok": True}
    assert Checkpoint.objects.get().workspace.slug == "newco"


def test_it_reuses_an_existing_workspace(workspace: Workspace) -> None:
    _out, err = _create_key("--workspace", workspace.slug)
    assert "Created workspace" not in err
    assert Workspace.objects.filter(slug=workspace.slug).count() == 1
    assert ApiKey.objects.get().workspace == workspace


@pytest.mark.parametrize(
    ("scopes", "scope"),
    [("read", "read"), ("read,write", "write"), ("admin", "admin"), (" write , read ", "write")],
)
def test_it_gives_the_highest_of_the_nested_scopes(scopes: str, scope: str) -> None:
    _create_key("--workspace", "newco", "--scopes", scopes)
    assert ApiKey.objects.get().scope == scope


def test_it_creates_a_read_key_that_cannot_write() -> None:
    secret = _create_key("--workspace", "newco", "--scopes", "read")[0].splitlines()[-1]
    response = _client(secret).post(
        "/api/v1/threads/t1/checkpoints/", {"agent_id": "a", "state": {}}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scopes", "bogus"], "--scopes takes a comma list of read, write, admin"),
        (["--scopes", "read,root"], "--scopes takes a comma list of read, write, admin"),
        (["--scopes", ""], "--scopes takes a comma list of read, write, admin"),
        (["--scopes", ","], "--scopes takes a comma list of read, write, admin"),
        (["--throttle-rate", "lots"], "--throttle-rate"),
        (["--throttle-rate", "0/s"], "--throttle-rate"),
        (["--name", ""], "--name must be"),
        (["--name", "x" * 201], "--name must be"),
    ],
)
def test_it_refuses_bad_options_and_creates_nothing(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        _create_key("--workspace", "newco", *args)
    assert not Workspace.objects.exists()
    assert not ApiKey.objects.exists()


@pytest.mark.parametrize("slug", ["has space", "a/b", "dots.not.allowed", "", "x" * 65, "ünï"])
def test_it_refuses_a_bad_workspace_slug(slug: str) -> None:
    with pytest.raises(CommandError, match="--workspace must be a slug"):
        _create_key("--workspace", slug)
    assert not Workspace.objects.exists()


def test_it_sets_a_throttle_rate() -> None:
    _create_key("--workspace", "newco", "--throttle-rate", "100/s")
    assert ApiKey.objects.get().throttle_rate == "100/s"


def test_it_exits_0_when_every_checkpoint_verifies(workspace: Workspace) -> None:
    for n in range(3):
        make_checkpoint(workspace, f"t{n}", state={"n": n, "big": 2**80, "f": 0.1, "s": "決定\x00"})
    other = WorkspaceFactory.create(slug="other")
    make_checkpoint(other, "t0")
    out = StringIO()
    call_command("verify_integrity", stdout=out)  # would raise SystemExit(1) on a mismatch
    assert out.getvalue().splitlines() == ["checked 4 checkpoints, 0 mismatched"]


def test_it_refuses_an_unknown_workspace_in_verify_integrity() -> None:
    with pytest.raises(CommandError, match="No workspace 'nope'"):
        call_command("verify_integrity", "--workspace", "nope", stdout=StringIO())
