"""`CairnCheckpointer`: PyAgenity's checkpointer on Cairn (a `BaseCheckpointer` with PyAgenity installed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.client import Client
from checkpoints.sdk.client_pair import client_pair
from checkpoints.sdk.pyagenity import convert
from checkpoints.sdk.pyagenity.operations import CheckpointerFlows

S = TypeVar("S")

if TYPE_CHECKING or not convert.PYAGENITY_INSTALLED:
    Base: Any = object
else:  # pragma: no cover - exercised in the Python 3.12 job (tests/sdk/test_seed_pyagenity.py)
    Base = convert.BaseCheckpointer


class CairnCheckpointer(CheckpointerFlows, Base):
    """PyAgenity's checkpointer API on Cairn: `a*` methods are async (AsyncClient), the others block
    (Client). States are rebuilt as `config["state_class"]`, else `state_type`, else PyAgenity's
    `AgentState` (plain data without PyAgenity)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
        agent_id: str = "pyagenity",
        state_type: Any = None,
    ) -> None:
        self.client, self.async_client = client_pair(base_url, api_key, client, async_client)
        self.agent_id = agent_id
        self.state_type = state_type

    @classmethod
    def from_env(cls, **options: Any) -> CairnCheckpointer:
        return cls(client=Client.from_env(), async_client=AsyncClient.from_env(), **options)

    # --- setup and release ------------------------------------------------------------------------------

    async def asetup(self) -> bool:
        """True: the server owns and migrates its schema, so there is nothing to create here."""
        return True

    def setup(self) -> bool:
        return True

    async def arelease(self) -> bool:
        """Close both clients' connections; True, as PyAgenity's."""
        self.client.close()
        await self.async_client.aclose()
        return True

    def release(self) -> bool:
        """Close the blocking client's connections (the async client's belong to its event loop: use
        `arelease` there); True."""
        self.client.close()
        return True

    # --- async ------------------------------------------------------------------------------------------

    async def aput_state(self, config: Mapping[str, Any], state: S) -> S:
        """Save the thread's state (a new head checkpoint); creates the thread for this user if needed."""
        return await self.async_client.run(self.put_state_flow(self.async_client.memory, config, state))

    async def aget_state(self, config: Mapping[str, Any]) -> Any:
        """The thread's latest state (served from Cairn's cache), or None."""
        return await self.async_client.run(self.get_state_flow(config))

    aget_state_cache = aget_state
    aput_state_cache = aput_state

    async def aclear_state(self, config: Mapping[str, Any]) -> bool:
        """Forget the thread's state (its checkpoints); messages stay."""
        return await self.async_client.run(self.clear_state_flow(self.async_client.memory, config))

    async def aput_messages(
        self, config: Mapping[str, Any], messages: Sequence[Any], metadata: Mapping[str, Any] | None = None
    ) -> bool:
        """Append messages in order (one transaction; each gets a seq); `metadata` is added to each."""
        return await self.async_client.run(self.put_messages_flow(config, messages, metadata))

    async def alist_messages(
        self,
        config: Mapping[str, Any],
        search: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        """Messages in order (PyAgenity `Message`s when it is installed); `search` is full text."""
        return await self.async_client.run(self.list_messages_flow(config, search, offset, limit))

    async def aget_message(self, config: Mapping[str, Any], message_id: str | int) -> Any:
        return await self.async_client.run(self.get_message_flow(config, message_id))

    async def adelete_message(self, config: Mapping[str, Any], message_id: str | int) -> bool:
        return await self.async_client.run(self.delete_message_flow(config, message_id))

    async def aput_thread(self, config: Mapping[str, Any], thread_info: Any) -> bool:
        """Create or update the thread's name and metadata."""
        return await self.async_client.run(self.put_thread_flow(config, thread_info))

    async def aget_thread(self, config: Mapping[str, Any]) -> Any:
        return await self.async_client.run(self.get_thread_flow(config))

    async def alist_threads(
        self,
        config: Mapping[str, Any],
        search: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        """The user's threads, most recently updated first; `search` matches the name."""
        return await self.async_client.run(self.list_threads_flow(config, search, offset, limit))

    async def aclean_thread(self, config: Mapping[str, Any]) -> bool:
        """Erase the thread with everything under it (False if this user has no such thread)."""
        return await self.async_client.run(self.clean_thread_flow(self.async_client.memory, config))

    # --- sync -------------------------------------------------------------------------------------------

    def put_state(self, config: Mapping[str, Any], state: S) -> S:
        return self.client.run(self.put_state_flow(self.client.memory, config, state))

    def get_state(self, config: Mapping[str, Any]) -> Any:
        return self.client.run(self.get_state_flow(config))

    get_state_cache = get_state
    put_state_cache = put_state

    def clear_state(self, config: Mapping[str, Any]) -> bool:
        return self.client.run(self.clear_state_flow(self.client.memory, config))

    def put_messages(
        self, config: Mapping[str, Any], messages: Sequence[Any], metadata: Mapping[str, Any] | None = None
    ) -> bool:
        return self.client.run(self.put_messages_flow(config, messages, metadata))

    def list_messages(
        self,
        config: Mapping[str, Any],
        search: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        return self.client.run(self.list_messages_flow(config, search, offset, limit))

    def get_message(self, config: Mapping[str, Any], message_id: str | int) -> Any:
        return self.client.run(self.get_message_flow(config, message_id))

    def delete_message(self, config: Mapping[str, Any], message_id: str | int) -> bool:
        return self.client.run(self.delete_message_flow(config, message_id))

    def put_thread(self, config: Mapping[str, Any], thread_info: Any) -> bool:
        return self.client.run(self.put_thread_flow(config, thread_info))

    def get_thread(self, config: Mapping[str, Any]) -> Any:
        return self.client.run(self.get_thread_flow(config))

    def list_threads(
        self,
        config: Mapping[str, Any],
        search: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        return self.client.run(self.list_threads_flow(config, search, offset, limit))

    def clean_thread(self, config: Mapping[str, Any]) -> bool:
        return self.client.run(self.clean_thread_flow(self.client.memory, config))
