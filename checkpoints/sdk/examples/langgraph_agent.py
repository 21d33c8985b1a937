"""A LangGraph agent whose memory lives in Cairn: plan -> tools -> review (asks a human) -> finish.

The checkpointer is the only Cairn-specific line (`CairnSaver.from_env()`). Run it three times on one thread:

    export CAIRN_URL=http://127.0.0.1:8000 CAIRN_API_KEY=<key>
    python -m checkpoints.sdk.examples.langgraph_agent demo-thread   # plans, calls the tool, asks for review
    python -m checkpoints.sdk.examples.langgraph_agent demo-thread   # answers the review: "yes"
    python -m checkpoints.sdk.examples.langgraph_agent demo-thread   # nothing left: prints the final state

If a run dies (Ctrl-C, a crash, `kill -9`), the next run resumes from the last checkpoint saved.
Set CAIRN_EXAMPLE_PAUSE_IN_TOOLS=<marker file> to make the tools node write the marker and wait (the tests
kill the process there), and CAIRN_EXAMPLE_LOG=<file> to record every node execution.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from checkpoints.sdk.langgraph import CairnSaver


class AgentState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    numbers: tuple[int, int]
    results: dict[str, int]
    started_at: datetime
    approved: bool


TOOLS = {"add": lambda a, b: a + b, "multiply": lambda a, b: a * b}


def _log(node: str) -> None:
    path = os.environ.get("CAIRN_EXAMPLE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(node + "\n")


def plan(state: AgentState) -> dict[str, Any]:
    _log("plan")
    a, b = state["numbers"]
    calls = [{"name": name, "args": {"a": a, "b": b}, "id": f"call-{name}"} for name in TOOLS]
    message = AIMessage(content=f"I will add and multiply {a} and {b}.", tool_calls=calls)
    return {"messages": [message], "started_at": datetime.now(UTC)}


def tools(state: AgentState) -> dict[str, Any]:
    """A tool-like node: runs the tool calls of the last AI message and answers each with a ToolMessage."""
    _log("tools")
    marker = os.environ.get("CAIRN_EXAMPLE_PAUSE_IN_TOOLS")
    if marker:
        Path(marker).write_text("in tools", encoding="utf-8")
        time.sleep(600)  # the test kills the process here
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    results: dict[str, int] = {}
    answers = []
    for call in last.tool_calls:
        results[call["name"]] = TOOLS[call["name"]](**call["args"])
        answers.append(
            ToolMessage(content=str(results[call["name"]]), tool_call_id=call["id"], name=call["name"])
        )
    return {"messages": answers, "results": results}


def review(state: AgentState) -> dict[str, Any]:
    _log("review")
    answer = interrupt({"question": "Keep these results?", "results": state["results"]})
    return {"approved": answer == "yes", "messages": [HumanMessage(content=f"Review: {answer}")]}


def finish(state: AgentState) -> dict[str, Any]:
    _log("finish")
    verdict = "kept" if state.get("approved") else "discarded"
    return {"messages": [AIMessage(content=f"Results {state['results']} {verdict}.")]}


def build(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(AgentState)
    for node in (plan, tools, review, finish):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "tools")
    graph.add_edge("tools", "review")
    graph.add_edge("review", "finish")
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=checkpointer)


def step(
    app: CompiledStateGraph[Any, Any, Any, Any], thread_id: str, numbers: tuple[int, int] = (6, 7)
) -> str:
    """Advance the thread by one run: start it, resume it after a crash, or answer the review."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    snapshot = app.get_state(config)
    if not snapshot.values:
        start: dict[str, Any] = {"numbers": numbers, "messages": [HumanMessage(content="Compute please.")]}
        app.invoke(start, config)
        return "started"
    if snapshot.interrupts:
        resume: Command[Any] = Command(resume="yes")
        app.invoke(resume, config)
        return "resumed after review"
    if snapshot.next:
        app.invoke(None, config)  # a run that died: continue from its last checkpoint
        return "recovered"
    return "done"


def main(argv: list[str]) -> None:
    thread_id = argv[1] if len(argv) > 1 else "langgraph-demo"
    with CairnSaver.from_env() as checkpointer:
        app = build(checkpointer)
        outcome = step(app, thread_id)
        state = app.get_state({"configurable": {"thread_id": thread_id}})
        print(f"{thread_id}: {outcome}; next={list(state.next)} results={state.values.get('results')}")
        for message in state.values.get("messages", []):
            print(f"  {message.type}: {message.content}")


if __name__ == "__main__":
    main(sys.argv)
