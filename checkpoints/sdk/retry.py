"""The one retry policy of every HTTP call Cairn makes to another service: the SDK's transport
(`checkpoints.sdk.transport`, blocking and async alike) and the LLM client
(`checkpoints.llm.openai_compatible`).

It is tenacity configured once (docs/sdk.md, "Retries"): `RetryPolicy.retrying(may_retry)` is a
`tenacity.Retrying` that
- makes at most `max_retries + 1` attempts, retrying only the exceptions `may_retry` accepts (each caller says
  which failures are transient, and the SDK which calls may be repeated);
- waits what the answer's Retry-After asked (an exception's `retry_after`, in seconds) plus up to 10% (at most
  1 s) of jitter, and gives up at once when that is longer than `max_retry_after`;
- else waits an exponential backoff with full jitter (`tenacity.wait_random_exponential`), so clients that
  failed together do not retry together;
- re-raises the last exception when it gives up.
The caller says how a delay is waited (`sleep`): blocking, or handed to the async driver
(`checkpoints.sdk.drive`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import tenacity


def retry_after_seconds(raw: object) -> float | None:
    """A Retry-After value (seconds, or an HTTP date) as seconds from now; None when absent or unreadable."""
    if raw is None:
        return None
    try:
        return max(0.0, float(str(raw)))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(str(raw)) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def asked_delay(exc: BaseException | None) -> float | None:
    """The wait a failure asked for: its `retry_after` (the SDK's errors, the LLM client's failures)."""
    asked = getattr(exc, "retry_after", None)
    return asked if isinstance(asked, int | float) else None


@dataclass
class RetryPolicy:
    """How often and how long to retry. `max_retries=0` disables retries."""

    max_retries: int = 3
    backoff_base: float = 0.25
    backoff_max: float = 8.0
    max_retry_after: float = 60.0

    def retrying(
        self, may_retry: Callable[[BaseException], bool], *, sleep: Callable[[float], None] = time.sleep
    ) -> tenacity.Retrying:
        """One call's attempts: `for attempt in policy.retrying(...): with attempt: ...` (tenacity)."""

        def worth_retrying(exc: BaseException) -> bool:
            asked = asked_delay(exc)
            return may_retry(exc) and (asked is None or asked <= self.max_retry_after)

        return tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=self.wait,
            retry=tenacity.retry_if_exception(worth_retrying),
            sleep=sleep,
            reraise=True,
        )

    def wait(self, state: tenacity.RetryCallState) -> float:
        """Seconds before the next attempt: the Retry-After asked for, else the backoff."""
        asked = asked_delay(state.outcome.exception() if state.outcome is not None else None)
        if asked is None:
            return tenacity.wait_random_exponential(multiplier=self.backoff_base, max=self.backoff_max)(state)
        return asked + random.uniform(0, min(1.0, asked * 0.1))  # nosec B311 # retry jitter, not a secret
