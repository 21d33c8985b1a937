"""The official LangGraph checkpointer conformance suite (langgraph-checkpoint-conformance), run against
CairnSaver talking real HTTP to a live Cairn server on the test database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from checkpoints.sdk.langgraph import AsyncCairnSaver

pytestmark = pytest.mark.slow


def test_it_passes_every_capability_of_the_conformance_suite(
    cairn_url: str, cairn_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    @checkpointer_test(name="CairnSaver (live HTTP)")
    async def cairn_saver() -> AsyncGenerator[AsyncCairnSaver, None]:
        saver = AsyncCairnSaver(cairn_url, cairn_key)
        try:
            yield saver
        finally:
            await saver.aclose()
            saver.close()

    with capsys.disabled():
        print()
        report = asyncio.run(validate(cairn_saver, progress=ProgressCallbacks.verbose()))
        report.print_report()

    results: dict[str, Any] = report.to_dict()["results"]
    assert set(results) == {capability.value for capability in ALL_CAPABILITIES}
    not_detected = [name for name, result in results.items() if not result["detected"]]
    assert not_detected == [], f"capabilities not implemented: {not_detected}"
    failures = {name: result["failures"] for name, result in results.items() if result["tests_failed"]}
    assert failures == {}
    assert report.passed_all() and report.conformance_level() == "FULL"
    assert sum(result["tests_passed"] for result in results.values()) >= 70
