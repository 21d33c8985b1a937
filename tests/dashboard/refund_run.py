"""A LangGraph run whose payment step failed, stored as CairnSaver stores one: values encoded by the saver's
ValueCodec (messages as JSON, the exception through LangGraph's serializer), pending writes under the
checkpoint whose next step wrote them, task paths as LangGraph names them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt

from checkpoints.models import Checkpoint, Workspace
from checkpoints.sdk.langgraph.values import ValueCodec
from tests.factories import make_checkpoint, make_pending_write

THREAD = "refund-run"
CODEC = ValueCodec(JsonPlusSerializer())
REPLY = AIMessage(
    "Refunding 500 EUR",
    usage_metadata={"input_tokens": 120, "output_tokens": 30, "total_tokens": 150},
)


@dataclass
class RefundRun:
    start: Checkpoint  # step -1: the input
    asked: Checkpoint  # step 0: __start__ wrote the customer's words
    answered: Checkpoint  # step 1: agent replied (with token usage); then pay raised


def _write(checkpoint: Checkpoint, node: str, task_id: str, writes: list[tuple[str, object]]) -> None:
    for i, (channel, value) in enumerate(writes):
        make_pending_write(
            checkpoint,
            CODEC.encode(value),
            channel=channel,
            task_id=task_id,
            task_path=f"~__pregel_pull, {node}",
            idx=-1 if channel.startswith("__") else i,
        )


def _save(workspace: Workspace, step: int, at: datetime, messages: list[object]) -> Checkpoint:
    source = "input" if step < 0 else "loop"
    return make_checkpoint(
        workspace,
        THREAD,
        framework="langgraph",
        agent_id="refund-agent",
        step_index=step,
        step_name=source,
        created_at=at,
        state={"v": 4, "ts": at.isoformat(), "channel_values": {"messages": CODEC.encode(messages)}},
        metadata={"source": source, "step": step, "parents": {}},
    )


def build_refund_run(workspace: Workspace, *, interrupted: bool = False) -> RefundRun:
    at = timezone.now() - timedelta(minutes=5)
    asked_words = HumanMessage("I want a refund for order 77")
    start = _save(workspace, -1, at, [])
    _write(start, "__start__", "t-start", [("messages", [asked_words])])
    asked = _save(workspace, 0, at + timedelta(milliseconds=40), [asked_words])
    _write(asked, "agent", "t-agent", [("messages", [REPLY]), ("branch:to:pay", None)])
    answered = _save(workspace, 1, at + timedelta(seconds=2, milliseconds=500), [asked_words, REPLY])
    if interrupted:
        _write(answered, "pay", "t-pay", [("__interrupt__", [Interrupt(value="approve 500 EUR?", id="i-1")])])
    else:
        _write(answered, "pay", "t-pay", [("__error__", ValueError("refund above limit"))])
    return RefundRun(start, asked, answered)
