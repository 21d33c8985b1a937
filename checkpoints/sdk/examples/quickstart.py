"""The Client in five minutes: save, restore (verified), chain, diff, hand off, and read the timeline.

export CAIRN_URL=http://127.0.0.1:8000 CAIRN_API_KEY=<key>
python -m checkpoints.sdk.examples.quickstart
"""

from __future__ import annotations

from datetime import UTC, datetime

from checkpoints.ids import new_id
from checkpoints.sdk import Client, Gone


def main() -> None:
    thread = f"quickstart-{new_id()}"
    with Client.from_env() as cairn:
        first = cairn.checkpoint_save(
            thread_id=thread,
            agent_id="planner",
            state={
                "todo": ["fetch", "summarise"],
                "started": datetime.now(UTC),
            },  # the datetime becomes ISO text
            metadata={"source": "quickstart"},
            ttl_seconds=3600,
        ).checkpoint
        second = cairn.checkpoint_save(
            thread_id=thread, agent_id="planner", state={"todo": ["summarise"]}
        ).checkpoint
        print(f"saved {first.checkpoint_id} then {second.checkpoint_id} (parent {second.parent_id})")

        restored = cairn.checkpoint_get(thread, second.checkpoint_id)
        print(f"restored step {restored.step_index}, checksum verified: {restored.verified}")
        print("diff:", cairn.checkpoint_diff(thread, second.checkpoint_id).patch)

        handed = cairn.checkpoint_handoff(thread, second.checkpoint_id, target_agent_id="writer")
        inbox = cairn.checkpoints_timeline(handoff_target="writer")
        print(f"handed to {handed.agent_id}; writer's inbox holds {len(inbox)} checkpoint(s)")

        cairn.checkpoint_expire(thread, first.checkpoint_id)
        try:
            cairn.checkpoint_get(thread, first.checkpoint_id)
        except Gone as gone:
            assert gone.tombstone is not None
            print(f"expired: tombstone kept since {gone.tombstone.expired_at:%Y-%m-%d}")
        print("timeline:", [c.checkpoint_id for c in cairn.paginate(cairn.checkpoints_list, thread)])


if __name__ == "__main__":
    main()
