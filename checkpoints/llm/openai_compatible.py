"""A provider for any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp, ...

One request per attempt, with `response_format: json_schema` (strict) so servers that support structured
output constrain the answer; the answer is validated again here whatever the server claims. Attempts are
bounded by `max_attempts` in total:
- timeouts, connection errors, HTTP 429 and 5xx are retried after an exponential backoff with jitter,
  or after the Retry-After asked for (longer than `MAX_BACKOFF_SECONDS`: no retry) — the SDK's policy
  (`checkpoints.sdk.retry`);
- an invalid answer (not JSON, schema violations, refusal, truncated) is retried at once, telling the model
  what was wrong;
- any other HTTP 4xx is a configuration problem and fails at once.
When attempts run out, LLMUnavailable or LLMOutputInvalid says what happened on each attempt. Nothing is
written by the provider itself, so a failure leaves no partial medallion anywhere.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx

from checkpoints.llm import prompts
from checkpoints.llm.base import LLMOutputInvalid, LLMRequestRefused, LLMUnavailable
from checkpoints.medallion_schema import (
    Evidence,
    Medallion,
    MedallionContent,
    MedallionScope,
    SchemaError,
    content_json_schema,
)
from checkpoints.sdk.retry import RetryPolicy, retry_after_seconds

logger = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 30.0


class _Unavailable(Exception):
    """A transient failure (timeout, connection error, 429, 5xx): worth another attempt after a wait."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


class _InvalidAnswer(Exception):
    """An answer that is not a valid medallion: asked again at once, telling the model what was wrong."""

    retry_after = 0.0

    def __init__(self, problem: str, response: httpx.Response) -> None:
        super().__init__(problem)
        self.response = response


def _worth_retrying(exc: BaseException) -> bool:
    return isinstance(exc, _Unavailable | _InvalidAnswer)


class OpenAICompatibleProvider:
    """Chat completions over HTTP (httpx). `transport` lets tests and callers inject an httpx transport."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_seconds: float = 60.0,
        max_attempts: int = 3,
        backoff_seconds: float = 1.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self._model = model
        self.timeout_seconds = timeout_seconds
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        # The one retry policy (checkpoints.sdk.retry); a Retry-After beyond the backoff cap fails at once.
        self.retry = RetryPolicy(
            max_retries=max_attempts - 1,
            backoff_base=backoff_seconds,
            backoff_max=MAX_BACKOFF_SECONDS,
            max_retry_after=MAX_BACKOFF_SECONDS,
        )
        self.transport = transport
        self.sleep = sleep

    @property
    def model(self) -> str:
        return self._model

    def generate(self, scope: MedallionScope, evidence: Evidence) -> MedallionContent:
        return self._complete(prompts.generate_messages(scope, evidence))

    def update(self, existing: Medallion, evidence: Evidence) -> MedallionContent:
        return self._complete(prompts.update_messages(existing, evidence))

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "model": self._model,
            "messages": messages,
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "medallion_v1", "strict": True, "schema": content_json_schema()},
            },
        }

    def _headers(self) -> dict[str, str]:
        # Local servers (Ollama, llama.cpp) need no key; sending an empty bearer token would confuse some.
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _complete(self, messages: list[dict[str, str]]) -> MedallionContent:
        problems: list[str] = []
        with httpx.Client(timeout=self.timeout_seconds, transport=self.transport) as client:
            try:
                for attempt in self.retry.retrying(_worth_retrying, sleep=self.sleep):
                    with attempt:
                        try:
                            return self._attempt(client, messages)
                        except (_Unavailable, _InvalidAnswer) as failure:
                            problems.append(f"attempt {attempt.retry_state.attempt_number}: {failure}")
                            logger.warning("LLM %s, %s", self.url, problems[-1])
                            if isinstance(failure, _InvalidAnswer):
                                # Show the model its answer and what is wrong, so the retry can fix it.
                                answer = {
                                    "role": "assistant",
                                    "content": _answer_text(failure.response)[:20_000],
                                }
                                messages = [*messages, answer, prompts.correction_message(str(failure))]
                            raise
            except _InvalidAnswer:
                summary = "; ".join(problems)
                raise LLMOutputInvalid(
                    f"no valid medallion after {len(problems)} attempts: {summary}"
                ) from None
            except _Unavailable:
                raise LLMUnavailable(
                    f"{self.url} failed {len(problems)} attempts: {'; '.join(problems)}"
                ) from None
        raise AssertionError("tenacity ends its loop only by returning an answer or raising")

    def _attempt(self, client: httpx.Client, messages: list[dict[str, str]]) -> MedallionContent:
        """One request: the content, or _Unavailable / _InvalidAnswer; a refused request raises."""
        try:
            response = client.post(self.url, json=self._payload(messages), headers=self._headers())
        except httpx.TimeoutException as exc:
            raise _Unavailable(f"timed out after {self.timeout_seconds:g} s") from exc
        except httpx.TransportError as exc:
            raise _Unavailable(f"connection failed ({type(exc).__name__}: {exc})") from exc
        status = response.status_code
        if status == 429 or status >= 500:
            retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            raise _Unavailable(f"HTTP {status} {_snippet(response.text)}", retry_after)
        if status >= 400:
            raise LLMRequestRefused(
                f"{self.url} refused the request: HTTP {status} {_snippet(response.text)}"
            )
        try:
            return parse_completion(response)
        except LLMOutputInvalid as exc:
            raise _InvalidAnswer(str(exc), response) from exc


def _snippet(text: str) -> str:
    return text.strip().replace("\n", " ")[:300]


def _answer_text(response: httpx.Response) -> str:
    try:
        content = response.json()["choices"][0]["message"].get("content")
    except (ValueError, LookupError, TypeError, AttributeError):
        return response.text
    return content if isinstance(content, str) else json.dumps(content)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_completion(response: httpx.Response) -> MedallionContent:
    """The medallion content in a chat-completions response, or LLMOutputInvalid saying what is wrong."""
    try:
        body = response.json()
        choice = body["choices"][0]
        message = choice["message"]
    except (ValueError, LookupError, TypeError) as exc:
        raise LLMOutputInvalid(f"not a chat-completions response ({type(exc).__name__})") from exc
    if not isinstance(message, dict):
        raise LLMOutputInvalid("not a chat-completions response (message is not an object)")
    if message.get("refusal"):
        raise LLMOutputInvalid(f"the model refused: {str(message['refusal'])[:200]}")
    if choice.get("finish_reason") == "length":
        raise LLMOutputInvalid("the answer was cut off at the token limit")
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        raise LLMOutputInvalid("the answer is empty")
    text = content.strip()
    # Servers without structured output sometimes wrap the JSON in a Markdown fence.
    if text.startswith("```"):
        text = text.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise LLMOutputInvalid(f"malformed JSON ({exc})") from exc
    try:
        return MedallionContent.from_dict(data, require_all=True)
    except SchemaError as exc:
        raise LLMOutputInvalid(f"schema violation at {exc}") from exc
