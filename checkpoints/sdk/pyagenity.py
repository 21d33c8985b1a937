"""pyagenity parity: a checkpointer with pyagenity's method names (state, messages, threads; async and sync
twins), keyed by `config = {"thread_id": ..., "user_id": ...}`, on Cairn.

    from checkpoints.sdk.pyagenity import CairnCheckpointer      # was: PgCheckpointer(postgres_dsn=..., ...)

    checkpointer = CairnCheckpointer.from_env()
    config = {"thread_id": "conv_123", "user_id": "alice"}
    await checkpointer.aput_state(config, {"context": [], "step": 1})
    await checkpointer.aput_messages(config, [{"role": "user", "content": "What's the weather?"}])
    recent = await checkpointer.alist_messages(config, search="weather", limit=20)

A user never sees or writes another user's threads: every call names its user, the server filters lists by
user, and the checkpointer checks the owner of the thread before reading or writing it (another user's thread
answers NotFound, exactly like a missing one). Listing threads without a user is refused rather than
silently listing a default user's. Cairn's state cache (Redis in production) sits in front of the database
and is never staler than it, so `aget_state_cache` is `aget_state`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from checkpoints.sdk import flows
from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.calls import threads as th_calls
from checkpoints.sdk.client import Client
from checkpoints.sdk.errors import Conflict, NotFound
from checkpoints.sdk.jsonvalue import to_json, to_json_object
from checkpoints.sdk.models import Checkpoint, Message, Page, Thread

S = TypeVar("S")
MAX_PAGE = 500


@dataclass
class ThreadInfo:
    """A thread as pyagenity describes it. `run_id` is kept in the thread's metadata."""

    thread_id: str
    user_id: str | None = None
    thread_name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @classmethod
    def from_thread(cls, thread: Thread) -> ThreadInfo:
        metadata = dict(thread.metadata)
        return cls(
            thread_id=thread.thread_id,
            user_id=thread.user_id,
            thread_name=thread.name or None,
            metadata=metadata,
            run_id=metadata.get("run_id"),
            created_at=thread.created_at,
            updated_at=thread.updated_at,
        )


def _keys(config: Mapping[str, Any]) -> tuple[str, str]:
    """The thread and the user a config names; both are required (a thread is always someone's)."""
    thread_id, user_id = config.get("thread_id"), config.get("user_id")
    if not thread_id:
        raise ValueError("config needs a thread_id")
    if not user_id:
        raise ValueError("config needs a user_id: a user only ever reaches their own threads")
    return str(thread_id), str(user_id)


def _page_args(offset: int | None, limit: int | None) -> tuple[int, int | None]:
    if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
        raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        # limit=0 returned everything in pyagenity; here it is an error.
        raise ValueError(f"limit must be a positive integer (or None for all), got {limit!r}")
    return offset or 0, limit


def _message(message: Any, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """A pyagenity message (a mapping, a pydantic model, or an object with role/content) as Cairn's."""
    if isinstance(message, Mapping):
        data = dict(message)
    elif callable(getattr(message, "model_dump", None)):
        data = message.model_dump()
    else:
        data = {name: getattr(message, name) for name in th_calls.MESSAGE_FIELDS if hasattr(message, name)}
    data = {key: value for key, value in data.items() if key in th_calls.MESSAGE_FIELDS and value is not None}
    content = data.get("content", "")
    if not isinstance(content, str):
        # Content blocks: keep them whole, and their text as the searchable content.
        blocks = to_json(content, path="$.content")
        data["content_blocks"] = blocks if isinstance(blocks, list) else [blocks]
        data["content"] = " ".join(
            b["text"]
            for b in data["content_blocks"]
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    if metadata:
        data["metadata"] = {**to_json_object(metadata, path="$.metadata"), **data.get("metadata", {})}
    return th_calls.message_body(data)


class _Flows:
    """Every operation once, as a flow the sync and the async client both drive."""

    agent_id: str
    state_type: Any

    def _owned(self, thread_id: str, user_id: str, *, create: bool) -> flows.Flow[Thread | None]:
        """The thread if it belongs to `user_id`. Reading (`create=False`), another user's thread is None,
        exactly like a missing one, so its existence is not told. Writing (`create=True`), a missing thread
        is created for the user, and another user's thread is NotFound: it can be neither used nor taken."""
        for _attempt in range(2):
            try:
                # The server answers 404 for another user's thread (`?user_id=`); the owner is checked here
                # again, so neither side alone can let a thread leak.
                thread: Thread = yield th_calls.thread_get(thread_id, user_id=user_id)
            except NotFound:
                if not create:
                    return None
                try:
                    created: Thread = yield th_calls.thread_create(thread_id=thread_id, user_id=user_id)
                    return created
                except Conflict:
                    continue  # it exists: created meanwhile by this user, or another user's
            if thread.user_id == user_id:
                return thread
            if not create:
                return None
            break
        raise NotFound(f"Thread {thread_id!r} not found.", status=0)

    def _state_value(self, data: Any) -> Any:
        if self.state_type is None or data is None:
            return data
        validate = getattr(self.state_type, "model_validate", None)
        return validate(data) if callable(validate) else self.state_type(**data)

    def put_state_flow(
        self, memory: flows.ClientMemory, config: Mapping[str, Any], state: S
    ) -> flows.Flow[S]:
        thread_id, user_id = _keys(config)
        yield from self._owned(thread_id, user_id, create=True)
        # The server refuses (404) a save into another user's thread, so no check-then-write window remains.
        yield from flows.checkpoint_save(
            memory,
            thread_id=thread_id,
            agent_id=self.agent_id,
            state=state,
            metadata={"user_id": user_id},
            user_id=user_id,
        )
        return state

    def get_state_flow(self, config: Mapping[str, Any]) -> flows.Flow[Any]:
        thread_id, user_id = _keys(config)
        if (yield from self._owned(thread_id, user_id, create=False)) is None:
            return None
        try:
            head: Checkpoint = yield th_calls.thread_state(thread_id, user_id=user_id)
        except NotFound:
            return None
        return self._state_value(head.state)

    def clear_state_flow(self, memory: flows.ClientMemory, config: Mapping[str, Any]) -> flows.Flow[None]:
        thread_id, user_id = _keys(config)
        if (yield from self._owned(thread_id, user_id, create=False)) is not None:
            yield th_calls.thread_prune(thread_id, "delete", user_id=user_id)
            memory.forget_head(thread_id, "")

    def put_messages_flow(
        self, config: Mapping[str, Any], messages: Sequence[Any], metadata: Mapping[str, Any] | None
    ) -> flows.Flow[list[Message]]:
        thread_id, user_id = _keys(config)
        if not messages:
            return []
        yield from self._owned(thread_id, user_id, create=True)
        batch = [_message(m, metadata) for m in messages]
        stored: list[Message] = yield th_calls.messages_append(thread_id, batch, user_id=user_id)
        return stored

    def list_messages_flow(
        self, config: Mapping[str, Any], search: str | None, offset: int | None, limit: int | None
    ) -> flows.Flow[list[Message]]:
        thread_id, user_id = _keys(config)
        skip, limit = _page_args(offset, limit)
        if (yield from self._owned(thread_id, user_id, create=False)) is None:
            return []
        found: list[Message] = []
        cursor: str | None = None
        while limit is None or len(found) < limit:
            want = MAX_PAGE if limit is None else min(MAX_PAGE, limit - len(found) + skip)
            page: Page[Message] = yield th_calls.messages_list(
                thread_id, search=search, limit=want, cursor=cursor, user_id=user_id
            )
            rows = page.results
            if skip:
                dropped, skip = min(skip, len(rows)), max(0, skip - len(rows))
                rows = rows[dropped:]
            found.extend(rows)
            cursor = page.next_cursor
            if not cursor:
                break
        return found if limit is None else found[:limit]

    def get_message_flow(self, config: Mapping[str, Any], message_id: str) -> flows.Flow[Message]:
        thread_id, user_id = _keys(config)
        if (yield from self._owned(thread_id, user_id, create=False)) is None:
            raise NotFound(f"Thread {thread_id!r} not found.", status=0)
        message: Message = yield th_calls.message_get(thread_id, message_id, user_id=user_id)
        return message

    def delete_message_flow(self, config: Mapping[str, Any], message_id: str) -> flows.Flow[None]:
        thread_id, user_id = _keys(config)
        if (yield from self._owned(thread_id, user_id, create=False)) is None:
            raise NotFound(f"Thread {thread_id!r} not found.", status=0)
        yield th_calls.message_delete(thread_id, message_id, user_id=user_id)

    def put_thread_flow(self, config: Mapping[str, Any], thread_info: ThreadInfo) -> flows.Flow[ThreadInfo]:
        thread_id, user_id = _keys(config)
        if thread_info.thread_id != thread_id or (thread_info.user_id not in (None, user_id)):
            raise ValueError("thread_info must name the config's thread and user")
        yield from self._owned(thread_id, user_id, create=True)
        metadata = dict(thread_info.metadata)
        if thread_info.run_id is not None:
            metadata["run_id"] = thread_info.run_id
        changes: dict[str, Any] = {"metadata": metadata}
        if thread_info.thread_name is not None:
            changes["name"] = thread_info.thread_name
        updated: Thread = yield th_calls.thread_update(thread_id, changes, user_id=user_id)
        return ThreadInfo.from_thread(updated)

    def get_thread_flow(self, config: Mapping[str, Any]) -> flows.Flow[ThreadInfo | None]:
        thread_id, user_id = _keys(config)
        thread = yield from self._owned(thread_id, user_id, create=False)
        return ThreadInfo.from_thread(thread) if thread is not None else None

    def list_threads_flow(
        self, config: Mapping[str, Any], search: str | None, offset: int | None, limit: int | None
    ) -> flows.Flow[list[ThreadInfo]]:
        user_id = config.get("user_id")
        if not user_id:
            raise ValueError("config needs a user_id: listing threads never falls back to a default user")
        skip, limit = _page_args(offset, limit)
        found: list[ThreadInfo] = []
        cursor: str | None = None
        while limit is None or len(found) < limit:
            page: Page[Thread] = yield th_calls.threads_list(
                user_id=str(user_id), q=search, limit=MAX_PAGE, cursor=cursor
            )
            # The server filters by user; checked again here, so a filter bug can never leak a thread.
            mine = [ThreadInfo.from_thread(t) for t in page.results if t.user_id == str(user_id)]
            dropped, skip = min(skip, len(mine)), max(0, skip - len(mine))
            found.extend(mine[dropped:])
            cursor = page.next_cursor
            if not cursor:
                break
        return found if limit is None else found[:limit]

    def clean_thread_flow(self, memory: flows.ClientMemory, config: Mapping[str, Any]) -> flows.Flow[None]:
        thread_id, user_id = _keys(config)
        # Another user's thread reads as missing: nothing of this user's to clean.
        if (yield from self._owned(thread_id, user_id, create=False)) is not None:
            yield th_calls.thread_delete(thread_id, user_id=user_id)
            memory.forget_head(thread_id, "")


class CairnCheckpointer(_Flows):
    """pyagenity's checkpointer API on Cairn: `a*` methods are async (AsyncClient), the others block
    (Client). `state_type` (a pydantic model or a class taking the fields) rebuilds states on read."""

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
        if (client is None or async_client is None) and (base_url is None or api_key is None):
            raise ValueError("pass base_url and api_key, or both client and async_client")
        self.client = client or Client(base_url or "", api_key or "")
        self.async_client = async_client or AsyncClient(base_url or "", api_key or "")
        self.agent_id = agent_id
        self.state_type = state_type

    @classmethod
    def from_env(cls, **options: Any) -> CairnCheckpointer:
        return cls(client=Client.from_env(), async_client=AsyncClient.from_env(), **options)

    async def arelease(self) -> None:
        """Close both clients' connections (pyagenity's clean shutdown)."""
        self.client.close()
        await self.async_client.aclose()

    def release(self) -> None:
        """Close the blocking client's connections (the async client's belong to its event loop: use
        `arelease` there)."""
        self.client.close()

    # --- async ---------------------------------------------------------------------------------------------

    async def aput_state(self, config: Mapping[str, Any], state: S) -> S:
        """Save the thread's state (a new head checkpoint); creates the thread for this user if needed."""
        return await self.async_client.run(self.put_state_flow(self.async_client.memory, config, state))

    async def aget_state(self, config: Mapping[str, Any]) -> Any:
        """The thread's latest state (served from Cairn's cache), or None."""
        return await self.async_client.run(self.get_state_flow(config))

    aget_state_cache = aget_state
    aput_state_cache = aput_state

    async def aclear_state(self, config: Mapping[str, Any]) -> None:
        """Forget the thread's state (its checkpoints); messages stay."""
        await self.async_client.run(self.clear_state_flow(self.async_client.memory, config))

    async def aput_messages(
        self, config: Mapping[str, Any], messages: Sequence[Any], metadata: Mapping[str, Any] | None = None
    ) -> list[Message]:
        """Append messages in order (one transaction; each gets a seq); `metadata` is added to each."""
        return await self.async_client.run(self.put_messages_flow(config, messages, metadata))

    async def alist_messages(
        self,
        config: Mapping[str, Any],
        search: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[Message]:
        """Messages in order; `search` is full text (words, not JSON syntax)."""
        return await self.async_client.run(self.list_messages_flow(config, search, offset, limit))

    async def aget_message(self, config: Mapping[str, Any], message_id: str) -> Message:
        return await self.async_client.run(self.get_message_flow(config, message_id))

    async def adelete_message(self, config: Mapping[str, Any], message_id: str) -> None:
        await self.async_client.run(self.delete_message_flow(config, message_id))

    async def aput_thread(self, config: Mapping[str, Any], thread_info: ThreadInfo) -> ThreadInfo:
        """Create or update the thread's name and metadata."""
        return await self.async_client.run(self.put_thread_flow(config, thread_info))

    async def aget_thread(self, config: Mapping[str, Any]) -> ThreadInfo | None:
        return await self.async_client.run(self.get_thread_flow(config))

    async def alist_threads(
        self,
        config: Mapping[str, Any],
        search: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        """The user's threads, most recently updated first; `search` matches the name."""
        return await self.async_client.run(self.list_threads_flow(config, search, offset, limit))

    async def aclean_thread(self, config: Mapping[str, Any]) -> None:
        """Erase the thread with everything under it."""
        await self.async_client.run(self.clean_thread_flow(self.async_client.memory, config))

    # --- sync ----------------------------------------------------------------------------------------------

    def put_state(self, config: Mapping[str, Any], state: S) -> S:
        return self.client.run(self.put_state_flow(self.client.memory, config, state))

    def get_state(self, config: Mapping[str, Any]) -> Any:
        return self.client.run(self.get_state_flow(config))

    get_state_cache = get_state
    put_state_cache = put_state

    def clear_state(self, config: Mapping[str, Any]) -> None:
        self.client.run(self.clear_state_flow(self.client.memory, config))

    def put_messages(
        self, config: Mapping[str, Any], messages: Sequence[Any], metadata: Mapping[str, Any] | None = None
    ) -> list[Message]:
        return self.client.run(self.put_messages_flow(config, messages, metadata))

    def list_messages(
        self,
        config: Mapping[str, Any],
        search: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[Message]:
        return self.client.run(self.list_messages_flow(config, search, offset, limit))

    def get_message(self, config: Mapping[str, Any], message_id: str) -> Message:
        return self.client.run(self.get_message_flow(config, message_id))

    def delete_message(self, config: Mapping[str, Any], message_id: str) -> None:
        self.client.run(self.delete_message_flow(config, message_id))

    def put_thread(self, config: Mapping[str, Any], thread_info: ThreadInfo) -> ThreadInfo:
        return self.client.run(self.put_thread_flow(config, thread_info))

    def get_thread(self, config: Mapping[str, Any]) -> ThreadInfo | None:
        return self.client.run(self.get_thread_flow(config))

    def list_threads(
        self,
        config: Mapping[str, Any],
        search: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        return self.client.run(self.list_threads_flow(config, search, offset, limit))

    def clean_thread(self, config: Mapping[str, Any]) -> None:
        self.client.run(self.clean_thread_flow(self.client.memory, config))
