"""pyagenity's checkpointer API on Cairn: state, messages and threads per (thread_id, user_id).

python -m checkpoints.sdk.examples.pyagenity_example
"""

from __future__ import annotations

import asyncio

from checkpoints.ids import new_id
from checkpoints.sdk.pyagenity import CairnCheckpointer, ThreadInfo


async def main() -> None:
    checkpointer = CairnCheckpointer.from_env()
    config = {"thread_id": f"conv-{new_id()}", "user_id": "alice"}
    await checkpointer.aput_thread(
        config, ThreadInfo(thread_id=config["thread_id"], thread_name="Weather inquiry")
    )
    await checkpointer.aput_state(config, {"context": ["asked about weather"], "step": 1})
    await checkpointer.aput_messages(
        config,
        [
            {"role": "user", "content": "What's the weather in Lyon?"},
            {"role": "assistant", "content": "Sunny."},
        ],
        metadata={"node": "chat"},
    )
    print("state:", await checkpointer.aget_state(config))
    print(
        "found:", [m.content for m in await checkpointer.alist_messages(config, search="weather", limit=10)]
    )
    print("alice's threads:", [t.thread_name for t in await checkpointer.alist_threads({"user_id": "alice"})])
    intruder = {**config, "user_id": "mallory"}
    print("mallory sees:", await checkpointer.aget_state(intruder))
    await checkpointer.aclean_thread(config)
    await checkpointer.arelease()


if __name__ == "__main__":
    asyncio.run(main())
