"""agent-checkpoint on Cairn: state_dict / load_state_dict, rollback on exception, auto-checkpoint, history.

python -m checkpoints.sdk.examples.agent_checkpoint_example
"""

from __future__ import annotations

from datetime import UTC, datetime

from checkpoints.ids import new_id
from checkpoints.sdk.agent_checkpoint import Checkpointable, CheckpointManager, checkpoint


class ConversationAgent(Checkpointable):
    def __init__(self) -> None:
        self.history: list[str] = []
        self.tokens_used = 0
        self.topics: set[str] = set()
        self.started = datetime.now(UTC)
        self._client = "not checkpointed"

    def send(self, message: str, tokens: int = 10) -> None:
        self.history.append(message)
        self.tokens_used += tokens
        self.topics.add(message.split()[0].lower())


def main() -> None:
    key = f"session-{new_id()}"
    manager = CheckpointManager.from_env()
    agent = ConversationAgent()
    agent.send("Hello there", tokens=5)
    agent.send("How are you?", tokens=8)

    try:
        with manager.rollback(key, agent):
            agent.send("CORRUPTED", tokens=9999)
            raise RuntimeError("API call failed mid-way")
    except RuntimeError:
        pass
    print(f"after rollback: {agent.tokens_used} tokens, history {agent.history}")

    @checkpoint(manager, key=key, every=2)
    def process(agent: ConversationAgent, message: str) -> None:
        agent.send(message)

    for n in range(4):
        process(agent, f"Step {n}")
    restored = ConversationAgent()
    manager.load(key, restored)
    print(f"restored {len(restored.history)} messages, topics {sorted(restored.topics)}")
    print("history:", [h["id"] for h in manager.history(key, n=3)])
    print("diff vs now:", manager.diff(key, agent=agent)["changed"].keys())


if __name__ == "__main__":
    main()
