"""The one retry policy (checkpoints.sdk.retry) on its own, its waits recorded instead of slept: how many
attempts, how long between them, and when a Retry-After makes it give up at once."""

from __future__ import annotations

import pytest

from checkpoints.sdk.retry import RetryPolicy, retry_after_seconds


class Refused(Exception):
    def __init__(self, retry_after: float | None = None) -> None:
        super().__init__("refused")
        self.retry_after = retry_after


def attempts_and_waits(policy: RetryPolicy, failures: list[Exception]) -> tuple[int, list[float], str]:
    """Run the policy's loop over a call failing with `failures` in turn, then answering."""
    slept: list[float] = []
    attempts = 0
    outcome = "answered"
    try:
        for attempt in policy.retrying(lambda exc: isinstance(exc, Refused), sleep=slept.append):
            with attempt:
                attempts += 1
                if attempts <= len(failures):
                    raise failures[attempts - 1]
                break
    except Exception as exc:
        outcome = f"raised {exc}"
    return attempts, slept, outcome


def test_it_backs_off_exponentially_with_full_jitter_up_to_the_cap() -> None:
    policy = RetryPolicy(max_retries=5, backoff_base=0.5, backoff_max=1.5)
    attempts, slept, outcome = attempts_and_waits(policy, [Refused()] * 4)
    assert (attempts, outcome, len(slept)) == (5, "answered", 4)
    for wait, ceiling in zip(slept, [0.5, 1.0, 1.5, 1.5], strict=True):
        assert 0 <= wait <= ceiling


def test_it_gives_up_after_the_retries_allowed_with_the_last_failure() -> None:
    attempts, slept, outcome = attempts_and_waits(RetryPolicy(max_retries=2), [Refused()] * 5)
    assert (attempts, len(slept), outcome) == (3, 2, "raised refused")
    assert attempts_and_waits(RetryPolicy(max_retries=0), [Refused()])[:2] == (1, [])


def test_it_waits_what_retry_after_asked_with_a_little_jitter() -> None:
    attempts, slept, outcome = attempts_and_waits(
        RetryPolicy(), [Refused(retry_after=5), Refused(retry_after=0)]
    )
    assert (attempts, outcome) == (3, "answered")
    assert 5 <= slept[0] <= 5.5 and slept[1] == 0


def test_a_retry_after_beyond_max_retry_after_is_raised_at_once() -> None:
    policy = RetryPolicy(max_retry_after=10)
    assert attempts_and_waits(policy, [Refused(retry_after=11)]) == (1, [], "raised refused")


def test_other_failures_are_never_retried() -> None:
    attempts, slept, outcome = attempts_and_waits(RetryPolicy(), [ValueError("a bug")])
    assert (attempts, slept, outcome) == (1, [], "raised a bug")


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        (None, None),
        ("7", 7.0),
        (" 2.5", 2.5),
        ("-3", 0.0),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
    ],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(raw: str | None, seconds: float | None) -> None:
    assert retry_after_seconds(raw) == seconds
