"""Sign-in throttling on the dashboard and the admin: repeated wrong passwords lock the account (and the
client address) for the window, even against the right password, with a clear message and an audit event.
Behind `CAIRN_TRUSTED_PROXIES` proxies the client address comes from X-Forwarded-For, never otherwise.
django-axes counts (checkpoints/services/login_throttle.py), in the shared cache."""

from __future__ import annotations

import time

import pytest
from django.test import Client, RequestFactory
from pytest_django.fixtures import Settings

from checkpoints.client_address import client_address
from checkpoints.models import AuditEvent, Workspace
from tests.dashboard.world import PASSWORD, make_user

pytestmark = pytest.mark.django_db

LOGIN_PAGES = ["/dashboard/login/", "/admin/login/"]


@pytest.fixture(autouse=True)
def small_limit(settings: Settings) -> None:
    settings.CAIRN_LOGIN_MAX_FAILURES = 5
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _sign_in(
    client: Client,
    url: str,
    username: str,
    password: str,
    address: str = "203.0.113.7",
    forwarded_for: str | None = None,
) -> str:
    headers = {} if forwarded_for is None else {"X-Forwarded-For": forwarded_for}
    response = client.post(
        url, {"username": username, "password": password}, headers=headers, REMOTE_ADDR=address
    )
    if response.status_code == 302:
        return "signed in"
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("url", LOGIN_PAGES)
def test_wrong_passwords_lock_the_account_even_against_the_right_one(url: str, workspace: Workspace) -> None:
    make_user("alice", workspaces=(workspace,))
    for _ in range(5):
        assert "correct username and password" in _sign_in(Client(), url, "alice", "wrong")
    page = _sign_in(Client(), url, "alice", PASSWORD)
    assert "Too many failed sign-ins for this account or from this address. Try again in 15 minutes." in page
    # Another address is locked out of this account too: the username is counted on its own.
    assert "Too many failed sign-ins" in _sign_in(Client(), url, "ALICE ", PASSWORD, address="198.51.100.1")
    event = AuditEvent.objects.get(action="user.login_locked")
    assert (event.workspace, event.target_type, event.target_id) == (workspace, "user", "alice")
    locked_seconds = event.details.pop("locked_seconds")
    assert event.details == {"client": "203.0.113.7", "failures": 5}
    assert 0 < locked_seconds <= 901


def test_one_address_guessing_many_usernames_is_locked_too(workspace: Workspace) -> None:
    make_user("bob", workspaces=(workspace,))
    for n in range(5):
        _sign_in(Client(), LOGIN_PAGES[0], f"guess-{n}", "wrong")
    assert "Too many failed sign-ins" in _sign_in(Client(), LOGIN_PAGES[0], "bob", PASSWORD)
    assert _sign_in(Client(), LOGIN_PAGES[0], "bob", PASSWORD, address="198.51.100.2") == "signed in"
    assert not AuditEvent.objects.filter(action="user.login_locked").exists()  # no such accounts


def test_failures_below_the_limit_do_not_lock(workspace: Workspace) -> None:
    make_user("carol", workspaces=(workspace,))
    for _ in range(4):
        _sign_in(Client(), LOGIN_PAGES[0], "carol", "wrong")
    assert _sign_in(Client(), LOGIN_PAGES[0], "carol", PASSWORD) == "signed in"


def test_the_lock_ends_a_window_after_the_last_failure(workspace: Workspace, settings: Settings) -> None:
    # The counts expire in the cache itself (Redis's clock, when it is Redis): a one-second window, waited.
    settings.CAIRN_LOGIN_WINDOW_SECONDS = 1
    make_user("dave", workspaces=(workspace,))
    for _ in range(5):
        _sign_in(Client(), LOGIN_PAGES[0], "dave", "wrong")
    page = _sign_in(Client(), LOGIN_PAGES[0], "dave", PASSWORD)
    assert "Too many failed sign-ins for this account or from this address. Try again in 1 minute." in page
    time.sleep(1.2)
    assert _sign_in(Client(), LOGIN_PAGES[0], "dave", PASSWORD) == "signed in"


PROXY = "10.0.0.2"  # the REMOTE_ADDR of every request that comes through the proxy


@pytest.mark.parametrize(
    ("proxies", "forwarded_for", "expected"),
    [
        (0, "198.51.100.9", PROXY),  # nothing in front: the header is the client's own word
        (1, None, PROXY),
        (1, "6.6.6.6, 198.51.100.9", "198.51.100.9"),
        (1, " 2001:db8::1 ", "2001:db8::1"),
        (2, "6.6.6.6, 198.51.100.9, 10.0.0.1", "198.51.100.9"),
        (2, "198.51.100.9", PROXY),  # fewer entries than proxies
        (1, "", PROXY),
        (1, "198.51.100.9, not-an-address", PROXY),
        (1, "198.51.100.9,", PROXY),
        (1, "198.51.100.9:443", PROXY),
    ],
)
def test_the_client_address_is_the_one_the_outermost_trusted_proxy_saw(
    settings: Settings, proxies: int, forwarded_for: str | None, expected: str
) -> None:
    settings.CAIRN_TRUSTED_PROXIES = proxies
    headers = {} if forwarded_for is None else {"X-Forwarded-For": forwarded_for}
    assert client_address(RequestFactory().get("/", headers=headers, REMOTE_ADDR=PROXY)) == expected


def test_without_trusted_proxies_a_forged_forwarded_for_does_not_change_the_client(
    workspace: Workspace, settings: Settings
) -> None:
    settings.CAIRN_TRUSTED_PROXIES = 0
    make_user("erin", workspaces=(workspace,))
    for n in range(5):
        _sign_in(Client(), LOGIN_PAGES[0], f"guess-{n}", "wrong", forwarded_for=f"198.51.100.{n}")
    page = _sign_in(Client(), LOGIN_PAGES[0], "erin", PASSWORD, forwarded_for="198.51.100.99")
    assert "Too many failed sign-ins" in page
    assert _sign_in(Client(), LOGIN_PAGES[0], "erin", PASSWORD, address="198.51.100.3") == "signed in"


def test_behind_a_trusted_proxy_clients_are_counted_apart(workspace: Workspace, settings: Settings) -> None:
    settings.CAIRN_TRUSTED_PROXIES = 1
    make_user("frank", workspaces=(workspace,))
    make_user("grace", workspaces=(workspace,))
    for n in range(5):  # one client guesses (its own forged entry on the left changes nothing)
        _sign_in(Client(), LOGIN_PAGES[0], f"guess-{n}", "wrong", PROXY, f"6.6.6.{n}, 198.51.100.7")
    locked = _sign_in(Client(), LOGIN_PAGES[0], "frank", PASSWORD, PROXY, "198.51.100.7")
    assert "Too many failed sign-ins" in locked
    # Another client behind the same proxy is not locked.
    assert _sign_in(Client(), LOGIN_PAGES[0], "grace", PASSWORD, PROXY, "198.51.100.8") == "signed in"
    # The audit names the client, not the proxy.
    for _ in range(5):
        _sign_in(Client(), LOGIN_PAGES[0], "grace", "wrong", PROXY, "198.51.100.8")
    event = AuditEvent.objects.get(action="user.login_locked")
    assert (event.target_id, event.details["client"]) == ("grace", "198.51.100.8")


def test_behind_two_trusted_proxies_the_client_is_the_entry_the_outer_one_added(
    workspace: Workspace, settings: Settings
) -> None:
    settings.CAIRN_TRUSTED_PROXIES = 2
    make_user("heidi", workspaces=(workspace,))
    for n in range(5):  # forged entries on the left, then the client, then the outer proxy
        _sign_in(Client(), LOGIN_PAGES[0], f"guess-{n}", "wrong", PROXY, f"6.6.6.{n}, 198.51.100.7, 10.0.0.1")
    assert "Too many failed sign-ins" in _sign_in(
        Client(), LOGIN_PAGES[0], "heidi", PASSWORD, PROXY, "198.51.100.7, 10.0.0.1"
    )
    assert (
        _sign_in(Client(), LOGIN_PAGES[0], "heidi", PASSWORD, PROXY, "198.51.100.8, 10.0.0.1") == "signed in"
    )
