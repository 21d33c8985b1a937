"""Every operation of the PyAgenity checkpointer once, as a flow the blocking and the async client both
drive (see checkpoints.sdk.flows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from checkpoints.sdk import flows
from checkpoints.sdk.endpoints import saves
from checkpoints.sdk.endpoints import threads as th_calls
from checkpoints.sdk.endpoints.base import with_params
from checkpoints.sdk.errors import Conflict, NotFound
from checkpoints.sdk.models import Checkpoint, Message, Page, Thread
from checkpoints.sdk.pyagenity import convert

S = TypeVar("S")
MAX_PAGE = 500


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


class CheckpointerFlows:
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

    def _state_class(self, config: Mapping[str, Any]) -> Any:
        """`config["state_class"]`, else the checkpointer's `state_type`, else None (convert.state_value)."""
        return config.get("state_class") or self.state_type

    def put_state_flow(
        self, memory: flows.ClientMemory, config: Mapping[str, Any], state: S
    ) -> flows.Flow[S]:
        thread_id, user_id = _keys(config)
        yield from self._owned(thread_id, user_id, create=True)
        data, kind = convert.state_data(state)
        # The server refuses (404) a save into another user's thread, so no check-then-write window remains.
        yield from saves.checkpoint_save(
            memory,
            thread_id=thread_id,
            agent_id=self.agent_id,
            state=data,
            metadata={"user_id": user_id, convert.STATE_KIND_KEY: kind},
            user_id=user_id,
        )
        return state

    def get_state_flow(self, config: Mapping[str, Any]) -> flows.Flow[Any]:
        thread_id, user_id = _keys(config)
        if (yield from self._owned(thread_id, user_id, create=False)) is None:
            return None
        try:
            head: Checkpoint = yield with_params(th_calls.thread_state(thread_id), user_id=user_id)
        except NotFound:
            return None
        kind = (head.metadata or {}).get(convert.STATE_KIND_KEY)
        return convert.state_value(head.state, kind, self._state_class(config))

    def clear_state_flow(self, memory: flows.ClientMemory, config: Mapping[str, Any]) -> flows.Flow[bool]:
        thread_id, user_id = _keys(config)
        if (yield from self._owned(thread_id, user_id, create=False)) is not None:
            yield th_calls.thread_prune(thread_id, "delete", user_id=user_id)
            memory.forget_head(thread_id, "")
        return True

    def put_messages_flow(
        self, config: Mapping[str, Any], messages: Sequence[Any], metadata: Mapping[str, Any] | None
    ) -> flows.Flow[bool]:
        thread_id, user_id = _keys(config)
        if not messages:
            return True
        yield from self._owned(thread_id, user_id, create=True)
        batch = [convert.message_body(m, metadata) for m in messages]
        yield th_calls.messages_append(thread_id, batch, user_id=user_id)
        return True

    def list_messages_flow(
        self, config: Mapping[str, Any], search: str | None, offset: int | None, limit: int | None
    ) -> flows.Flow[list[Any]]:
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
        return [convert.to_pyagenity_message(m) for m in (found if limit is None else found[:limit])]

    def get_message_flow(self, config: Mapping[str, Any], message_id: str | int) -> flows.Flow[Any]:
        thread_id, user_id = _keys(config)
        if (yield from self._owned(thread_id, user_id, create=False)) is None:
            raise NotFound(f"Thread {thread_id!r} not found.", status=0)
        message: Message = yield th_calls.message_get(thread_id, str(message_id), user_id=user_id)
        return convert.to_pyagenity_message(message)

    def delete_message_flow(self, config: Mapping[str, Any], message_id: str | int) -> flows.Flow[bool]:
        thread_id, user_id = _keys(config)
        if (yield from self._owned(thread_id, user_id, create=False)) is None:
            raise NotFound(f"Thread {thread_id!r} not found.", status=0)
        yield th_calls.message_delete(thread_id, str(message_id), user_id=user_id)
        return True

    def put_thread_flow(self, config: Mapping[str, Any], thread_info: Any) -> flows.Flow[bool]:
        thread_id, user_id = _keys(config)
        owner = thread_info.user_id
        if str(thread_info.thread_id) != thread_id or (owner is not None and str(owner) != user_id):
            raise ValueError("thread_info must name the config's thread and user")
        yield from self._owned(thread_id, user_id, create=True)
        # Each put replaces the whole ThreadInfo, as in PyAgenity; the thread's name follows it.
        changes = {"metadata": convert.thread_metadata(thread_info), "name": thread_info.thread_name or ""}
        yield th_calls.thread_patch(thread_id, changes, user_id=user_id)
        return True

    def get_thread_flow(self, config: Mapping[str, Any]) -> flows.Flow[Any]:
        thread_id, user_id = _keys(config)
        thread = yield from self._owned(thread_id, user_id, create=False)
        return convert.thread_info(thread) if thread is not None else None

    def list_threads_flow(
        self, config: Mapping[str, Any], search: str | None, offset: int | None, limit: int | None
    ) -> flows.Flow[list[Any]]:
        user_id = config.get("user_id")
        if not user_id:
            raise ValueError("config needs a user_id: listing threads never falls back to a default user")
        skip, limit = _page_args(offset, limit)
        found: list[Any] = []
        cursor: str | None = None
        while limit is None or len(found) < limit:
            page: Page[Thread] = yield th_calls.threads_list(
                user_id=str(user_id), q=search, limit=MAX_PAGE, cursor=cursor
            )
            # The server filters by user; checked again here, so a filter bug can never leak a thread.
            mine = [convert.thread_info(t) for t in page.results if t.user_id == str(user_id)]
            dropped, skip = min(skip, len(mine)), max(0, skip - len(mine))
            found.extend(mine[dropped:])
            cursor = page.next_cursor
            if not cursor:
                break
        return found if limit is None else found[:limit]

    def clean_thread_flow(self, memory: flows.ClientMemory, config: Mapping[str, Any]) -> flows.Flow[bool]:
        """True if the thread was erased, False if this user has no such thread (as PyAgenity's)."""
        thread_id, user_id = _keys(config)
        # Another user's thread reads as missing: nothing of this user's to clean.
        if (yield from self._owned(thread_id, user_id, create=False)) is None:
            return False
        yield th_calls.thread_delete(thread_id, user_id=user_id)
        memory.forget_head(thread_id, "")
        return True
