"""Run by tests/sdk/test_seed_pyagenity.py with a Python 3.12+ that has PyAgenity installed (never collected
by pytest): a real PyAgenity graph on Cairn, and PyAgenity's own objects through the checkpointer.

    python pyagenity_child.py start|resume|objects|parity <thread_id>      (CAIRN_URL, CAIRN_API_KEY set)
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from pyagenity.checkpointer import BaseCheckpointer, InMemoryCheckpointer
from pyagenity.graph import StateGraph
from pyagenity.state import AgentState, Message
from pyagenity.state.message_block import TextBlock, ToolCallBlock
from pyagenity.utils import END
from pyagenity.utils.thread_info import ThreadInfo

from checkpoints.sdk.pyagenity import CairnCheckpointer


class ReviewState(AgentState):
    approved_by: str = ""


def plan(state: AgentState, config: dict[str, Any]) -> Message:
    return Message.text_message(f"plan after {len(state.context)} message(s)", role="assistant")


def act(state: AgentState, config: dict[str, Any]) -> Message:
    return Message.text_message(f"acted on: {state.context[-1].text()}", role="assistant")


def compiled(checkpointer: CairnCheckpointer, *, review: bool) -> Any:
    """The graph; `review` pauses it before ACT. PyAgenity 0.3.9 re-enters the node it paused at, and so
    pauses again at an `interrupt_before` node with any checkpointer (its InMemoryCheckpointer too): the
    approver resumes with the graph compiled without the pause."""
    graph = StateGraph()
    graph.add_node("PLAN", plan)
    graph.add_node("ACT", act)
    graph.add_edge("PLAN", "ACT")
    graph.add_edge("ACT", END)
    graph.set_entry_point("PLAN")
    return graph.compile(checkpointer=checkpointer, interrupt_before=["ACT"] if review else None)


RESULT = "RESULT "


def report(**values: Any) -> None:
    """One line the test reads (PyAgenity logs to stdout too)."""
    print(RESULT + json.dumps(values, default=str), flush=True)


async def start(checkpointer: CairnCheckpointer, config: dict[str, Any]) -> None:
    """Run until the interrupt, report, then hang until killed (no release, no clean shutdown)."""
    result = await compiled(checkpointer, review=True).ainvoke(
        {"messages": [Message.text_message("book a flight")]}, config
    )
    state = await checkpointer.aget_state(config)
    report(
        step="interrupted",
        is_base=isinstance(checkpointer, BaseCheckpointer),
        messages=[m.text() for m in result["messages"]],
        status=state.execution_meta.status.value,
        node=state.execution_meta.interrupted_node,
    )
    while True:
        time.sleep(60)


async def resume(checkpointer: CairnCheckpointer, config: dict[str, Any]) -> None:
    before = await checkpointer.aget_state(config)
    result = await compiled(checkpointer, review=False).ainvoke(
        {"messages": [Message.text_message("approved")]}, config
    )
    after = await checkpointer.aget_state(config)
    stored = await checkpointer.alist_messages(config)
    report(
        step="resumed",
        was=before.execution_meta.status.value,
        messages=[m.text() for m in result["messages"]],
        status=after.execution_meta.status.value,
        context=[m.text() for m in after.context],
        stored=[[type(m).__name__, m.role, m.text()] for m in stored],
        released=await checkpointer.arelease(),
    )


async def objects(checkpointer: CairnCheckpointer, config: dict[str, Any]) -> None:
    call = ToolCallBlock(id="call-1", name="weather", args={"city": "Lyon"})
    asked = Message(
        role="assistant",
        content=[TextBlock(text="Checking the weather."), call],
        tools_calls=[{"id": "call-1", "type": "function", "function": {"name": "weather"}}],
        reasoning="the user asked",
    )
    put = await checkpointer.aput_messages(config, [asked], metadata={"node": "chat"})
    [stored] = await checkpointer.alist_messages(config, search="weather")
    one = await checkpointer.aget_message(config, asked.message_id)
    await checkpointer.aput_state(config, ReviewState(approved_by="alice"))
    typed = await checkpointer.aget_state({**config, "state_class": ReviewState})
    plain = await checkpointer.aget_state(config)
    report(
        step="objects",
        setup=await checkpointer.asetup(),
        put=put,
        is_message=isinstance(stored, Message) and isinstance(one, Message),
        same_id=stored.message_id == asked.message_id,
        blocks=[block.model_dump(mode="json") for block in stored.content],
        tools_calls=stored.tools_calls,
        reasoning=stored.reasoning,
        metadata=stored.metadata,
        typed=[type(typed).__name__, typed.approved_by],
        plain=type(plain).__name__,
        thread_put=await checkpointer.aput_thread(config, ThreadInfo(thread_id=config["thread_id"])),
        thread=(await checkpointer.aget_thread(config)).model_dump(mode="json"),
        cleaned=await checkpointer.aclean_thread(config),
        released=await checkpointer.arelease(),
    )


async def stored_as_given(checkpointer: BaseCheckpointer, config: dict[str, Any]) -> dict[str, Any]:
    """What comes back of a plain-dict state and of the ThreadInfo put, from any checkpointer."""
    await checkpointer.aput_state(config, {"step": 1, "notes": ["a"]})
    plain = await checkpointer.aget_state(config)
    await checkpointer.aput_state(config, AgentState(context=[Message.text_message("hi")]))
    model = await checkpointer.aget_state(config)
    named = ThreadInfo(
        thread_id=config["thread_id"], thread_name="Trip", metadata={"tags": ["x"]}, run_id="r-1"
    )
    await checkpointer.aput_thread(config, named)
    first = await checkpointer.aget_thread(config)
    await checkpointer.aput_thread(config, ThreadInfo(thread_id=config["thread_id"]))
    bare = await checkpointer.aget_thread(config)
    return {
        "plain": [type(plain).__name__, plain],
        "model": [type(model).__name__, [m.text() for m in model.context]],
        "named": [type(first).__name__, first.model_dump(mode="json")],
        "bare": [type(bare).__name__, bare.model_dump(mode="json")],
    }


async def parity(checkpointer: CairnCheckpointer, config: dict[str, Any]) -> None:
    """The same calls on PyAgenity's own InMemoryCheckpointer and on Cairn's."""
    report(
        step="parity",
        seed=await stored_as_given(InMemoryCheckpointer(), config),
        cairn=await stored_as_given(checkpointer, config),
    )


def main() -> None:
    command, thread_id = sys.argv[1], sys.argv[2]
    config = {"thread_id": thread_id, "user_id": "alice"}
    step = {"start": start, "resume": resume, "objects": objects, "parity": parity}[command]
    asyncio.run(step(CairnCheckpointer.from_env(), config))


if __name__ == "__main__":
    main()
