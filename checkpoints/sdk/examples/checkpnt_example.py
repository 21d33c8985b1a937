"""checkpnt's five operations on Cairn, with checkpnt's own argument names (async, like checkpnt).

python -m checkpoints.sdk.examples.checkpnt_example
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from checkpoints.ids import new_id
from checkpoints.sdk.checkpnt import Client, Framework


async def main() -> None:
    session = f"run-{new_id()}"
    async with Client.from_env() as client:
        # 1. Save (a datetime and an int key in the state: checkpnt could not restore those)
        checkpoint_id = await client.save(
            agent_id="processor",
            framework=Framework.LANGGRAPH,
            execution_state={
                "messages": ["result from step 7"],
                "step": 7,
                "at": datetime.now(UTC),
                1: "one",
            },
            session_id=session,
            context={"invoice_id": "INV-4821"},
            step_index=7,
            step_name="after_tool_call",
            ttl_seconds=3600,
            customer="acme",
        )
        # 2. Restore (checksum verified end to end)
        checkpoint = await client.restore(checkpoint_id)
        print(f"restored step {checkpoint.step_index}: {checkpoint.execution_state['messages']}")
        # 3. Handoff: Agent A -> Agent B, parent chain and metadata preserved
        handoff_id = await client.handoff(checkpoint_id, target_agent_id="approval-agent")
        handed = await client.restore(handoff_id)
        print(f"handed to {handed.agent_id} from {handed.handoff_from}, metadata {handed.metadata}")
        # 4. Timeline, newest first
        for cp in await client.timeline(agent_id="processor", session_id=session):
            print(f"  step {cp.step_index}: {cp.step_name}")
        # 5. Expire
        await client.expire(checkpoint_id)
        print("expired", checkpoint_id)


if __name__ == "__main__":
    asyncio.run(main())
