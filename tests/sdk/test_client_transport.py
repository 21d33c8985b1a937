"""The SDK's error classes (one per API error code) and its retry policy, against a live server: lost
answers, injected 503s, a real throttle with Retry-After, and calls that must not be repeated."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from checkpoints.models import ApiKey, Workspace
from checkpoints.sdk import (
    AmbiguousId,
    AsyncClient,
    CairnConnectionError,
    CairnError,
    Client,
    Conflict,
    NotAuthenticated,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    PreconditionFailed,
    RetryPolicy,
    Throttled,
    Unavailable,
    ValidationError,
)
from checkpoints.sdk.endpoints.saves import thread_state_put
from checkpoints.sdk.models import CheckpointDraft
from tests.factories import WorkspaceFactory
from tests.sdk.faults import FAST_RETRIES, Fault, faulty_client


def test_it_raises_one_exception_class_per_error_code(
    client: Client,
    cairn_url: str,
    make_key: Callable[..., str],
    sdk_workspace: Workspace,
    settings: SettingsWrapper,
) -> None:
    saved = client.checkpoint_save(thread_id="errors", agent_id="a", state={"n": 1}).checkpoint

    with (
        Client(cairn_url, "cairn_not-a-real-key", retry=FAST_RETRIES) as stranger,
        pytest.raises(NotAuthenticated),
    ):
        stranger.thread_get("errors")
    with Client(cairn_url, make_key(sdk_workspace, ApiKey.Scope.READ)) as reader:
        assert reader.thread_get("errors").thread_id == "errors"
        with pytest.raises(PermissionDenied) as denied:
            reader.checkpoint_save(thread_id="errors", agent_id="a", state={})
        assert denied.value.status == 403 and denied.value.error_code == "permission_denied"
    with (
        Client(cairn_url, make_key(WorkspaceFactory.create(slug="elsewhere"))) as outsider,
        pytest.raises(NotFound),
    ):
        outsider.checkpoint_get("errors", saved.checkpoint_id)

    with pytest.raises(ValidationError) as invalid:
        client.checkpoint_save(thread_id="errors", agent_id="a", state={}, ttl_seconds=0)
    assert "ttl_seconds" in invalid.value.details["fields"]
    with pytest.raises(Conflict) as conflict:
        client.checkpoint_save(
            thread_id="errors",
            agent_id="a",
            state={"n": 2},
            checkpoint_id=saved.checkpoint_id,
            parent_id=None,
        )
    assert conflict.value.error_code == "conflict"

    stale = CheckpointDraft.build(
        thread_id="errors",
        namespace="",
        checkpoint_id="c-stale",
        parent_id="nope",
        agent_id="a",
        framework="custom",
        schema_version="1.0",
        step_index=1,
        step_name=None,
        run_id=None,
        state={},
        created_at=client.memory.clock.now(),
    )
    with pytest.raises(PreconditionFailed):
        client.send(thread_state_put(stale, if_match="nope"))

    client.thread_copy("errors", "errors-copy")
    with pytest.raises(AmbiguousId) as ambiguous:
        client.checkpoint_get_by_id(saved.checkpoint_id)
    assert len(ambiguous.value.details["candidates"]) == 2

    settings.CAIRN_MAX_BODY_BYTES = 2_000  # the live server reads settings per request
    with pytest.raises(PayloadTooLarge):
        client.checkpoint_save(thread_id="errors", agent_id="a", state={"blob": "x" * 5_000})
    assert all(issubclass(cls, CairnError) for cls in (NotAuthenticated, Unavailable, Throttled, AmbiguousId))


def test_it_does_not_repeat_a_call_that_is_not_idempotent(cairn_url: str, cairn_key: str) -> None:
    client, wire = faulty_client(cairn_url, cairn_key, Fault("POST", "/threads/", "lost"))
    with client, pytest.raises(CairnConnectionError):
        client.thread_create("made-once", name="only once")
    assert wire.count("POST", "/threads/") == 1
    with Client(cairn_url, cairn_key) as plain:
        assert plain.thread_get("made-once").name == "only once"  # the server did create it, once


def test_it_retries_a_503_for_reads_but_not_for_unsafe_writes(cairn_url: str, cairn_key: str) -> None:
    with Client(cairn_url, cairn_key) as plain:
        plain.thread_create("flaky")
    client, wire = faulty_client(
        cairn_url,
        cairn_key,
        Fault("GET", "/threads/flaky/", "503", times=2),
        Fault("POST", "/threads/flaky/fork/", "503"),
    )
    with client:
        assert client.thread_get("flaky").thread_id == "flaky"
        assert wire.count("GET", "/threads/flaky/") == 3
        with pytest.raises(Unavailable):
            client.thread_fork("flaky", new_thread_id="flaky-fork")
        assert wire.count("POST", "/threads/flaky/fork/") == 1


def test_it_gives_up_after_the_retries_allowed(cairn_url: str, cairn_key: str) -> None:
    client, wire = faulty_client(cairn_url, cairn_key, Fault("GET", "/threads/", "503", times=10))
    with client, pytest.raises(Unavailable):
        client.threads_list()
    assert wire.count("GET", "/threads/") == 1 + FAST_RETRIES.max_retries


def test_it_retries_connection_errors_when_nothing_was_sent() -> None:
    policy = RetryPolicy(max_retries=2, backoff_base=0.01)
    with Client("http://127.0.0.1:9", "key", retry=policy) as nowhere:  # port 9: nothing listens
        started = time.monotonic()
        with pytest.raises(CairnConnectionError):
            nowhere.thread_create("never")  # even a create: the request never left this machine
        assert time.monotonic() - started < 5


def test_it_honours_retry_after_when_throttled(
    cairn_url: str, sdk_workspace: Workspace, make_key: Callable[..., str]
) -> None:
    secret = make_key(sdk_workspace)
    ApiKey.objects.filter(workspace=sdk_workspace).update(throttle_rate="2/s")
    with Client(cairn_url, secret) as patient:
        started = time.monotonic()
        for _ in range(5):
            patient.threads_list()
        # Five calls at two per second: the client waited out at least one window instead of failing.
        assert time.monotonic() - started >= 0.9
    with Client(cairn_url, secret, retry=RetryPolicy(max_retry_after=0)) as hasty:
        with pytest.raises(Throttled) as throttled:
            for _ in range(5):
                hasty.threads_list()
        assert throttled.value.retry_after is not None and throttled.value.retry_after >= 1


def test_it_does_the_same_with_the_async_client(cairn_url: str, cairn_key: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(cairn_url, cairn_key) as cairn:
            first = (await cairn.checkpoint_save(thread_id="async", agent_id="a", state={"n": 1})).checkpoint
            second = (await cairn.checkpoint_save(thread_id="async", agent_id="a", state={"n": 2})).checkpoint
            assert second.parent_id == first.checkpoint_id and second.verified
            restored = await cairn.checkpoint_get("async", first.checkpoint_id)
            assert restored.verified and restored.state == {"n": 1}
            for n in range(3):
                await cairn.thread_create(f"async-{n}", user_id="u-async")
            ids = [t.thread_id async for t in cairn.paginate(cairn.threads_list, user_id="u-async", limit=2)]
            assert sorted(ids) == ["async-0", "async-1", "async-2"]
            with pytest.raises(NotFound):
                await cairn.thread_get("missing")

    asyncio.run(scenario())

    # One client used from two event loops (two asyncio.run calls): connections belong to a loop, so the
    # client opens fresh ones for the second loop instead of failing.
    shared = AsyncClient(cairn_url, cairn_key)

    async def read() -> str:
        return (await shared.thread_get("async")).thread_id

    async def read_and_close() -> str:
        try:
            return await read()
        finally:
            await shared.aclose()

    assert asyncio.run(read()) == "async"
    assert asyncio.run(read_and_close()) == "async"
    # The first loop's connections could not be closed from the second loop; collect them now rather than
    # at interpreter exit, when the live server is gone.
    gc.collect()
