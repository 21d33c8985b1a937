"""The API methods for threads and messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from checkpoints.sdk import flows
from checkpoints.sdk.calls import threads as th
from checkpoints.sdk.calls.base import UNSET, Unset, body_of
from checkpoints.sdk.endpoints.base import Endpoints, endpoint
from checkpoints.sdk.models import Checkpoint, Job, Message, Page, SaveResult, Thread
from checkpoints.sdk.transport import Call


class ThreadEndpoints(Endpoints):
    # --- threads -----------------------------------------------------------------------------------------

    @endpoint
    def thread_create(
        self,
        thread_id: str | None = None,
        *,
        name: str | None = None,
        user_id: str | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        scope: Mapping[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
    ) -> Call[Thread]:
        """Create a thread (a server UUIDv7 id when `thread_id` is None). Conflict if it exists."""
        return th.thread_create(
            thread_id=thread_id,
            name=name,
            user_id=user_id,
            tags=tags,
            metadata=metadata,
            scope=scope,
            ttl_seconds=ttl_seconds,
        )

    @endpoint
    def threads_list(
        self,
        *,
        user_id: str | None = None,
        tags: Sequence[str] | None = None,
        q: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        ordering: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Call[Page[Thread]]:
        """One page of threads (newest update first by default); `tags` match any."""
        return th.threads_list(
            user_id=user_id,
            tags=tags,
            q=q,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            updated_before=updated_before,
            ordering=ordering,
            limit=limit,
            cursor=cursor,
        )

    @endpoint
    def thread_get(self, thread_id: str, *, user_id: str | None = None) -> Call[Thread]:
        """A thread with message_count, checkpoint_count, storage_bytes and head. With `user_id`, only if
        it is that end user's thread (NotFound otherwise)."""
        return th.thread_get(thread_id, user_id=user_id)

    @endpoint
    def thread_update(
        self,
        thread_id: str,
        *,
        name: str | Unset = UNSET,
        user_id: str | Unset = UNSET,
        tags: Sequence[str] | Unset = UNSET,
        metadata: Mapping[str, Any] | Unset = UNSET,
        scope: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
        owner: str | None = None,
    ) -> Call[Thread]:
        """Change the fields passed (PATCH). `owner`: only if the thread is that end user's (NotFound
        otherwise); `user_id` is the new owner to set."""
        changes = body_of(
            name=name,
            user_id=user_id,
            tags=list(tags) if not isinstance(tags, Unset) else UNSET,
            metadata=metadata,
            scope=scope,
            ttl_seconds=ttl_seconds,
            pinned=pinned,
        )
        return th.thread_update(thread_id, changes, user_id=owner)

    @endpoint
    def thread_delete(self, thread_id: str, *, user_id: str | None = None) -> Call[None]:
        """Erase the thread and everything under it (checkpoints, writes, messages)."""
        return th.thread_delete(thread_id, user_id=user_id)

    @endpoint
    def thread_state(self, thread_id: str, *, namespace: str = "") -> flows.Flow[Checkpoint]:
        """The head checkpoint of the namespace, with its state (re-hashed). NotFound if none."""
        return flows.restore(th.thread_state(thread_id, namespace), self.memory)

    @endpoint
    def thread_state_put(
        self,
        thread_id: str,
        *,
        agent_id: str,
        state: Any,
        namespace: str = "",
        checkpoint_id: str | None = None,
        framework: str = "custom",
        schema_version: str = "1.0",
        step_index: int | None = None,
        step_name: str | None = None,
        run_id: str | None = None,
        context: Any = None,
        metadata: Any = None,
        ttl_seconds: int | Unset | None = UNSET,
        pinned: bool = False,
    ) -> flows.Flow[SaveResult]:
        """Save a new head whose parent is the current head (If-Match guarded; a moved head is re-read)."""
        return flows.checkpoint_save(
            self.memory,
            thread_id=thread_id,
            agent_id=agent_id,
            state=state,
            namespace=namespace,
            checkpoint_id=checkpoint_id,
            framework=framework,
            schema_version=schema_version,
            step_index=step_index,
            step_name=step_name,
            run_id=run_id,
            context=context,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
            pinned=pinned,
        )

    @endpoint
    def thread_fork(
        self,
        thread_id: str,
        *,
        checkpoint_id: str | None = None,
        namespace: str | None = None,
        new_thread_id: str | None = None,
        name: str | None = None,
    ) -> Call[Thread]:
        """A new thread whose head is a copy of `checkpoint_id` (default: the head), with the messages up
        to it."""
        return th.thread_fork(
            thread_id,
            checkpoint_id=checkpoint_id,
            namespace=namespace,
            new_thread_id=new_thread_id,
            name=name,
        )

    @endpoint
    def thread_copy(self, thread_id: str, target_thread_id: str) -> Call[Thread]:
        """A full copy: every checkpoint (same ids), pending write and message. Conflict if the target
        exists."""
        return th.thread_copy(thread_id, target_thread_id)

    @endpoint
    def thread_prune(
        self, thread_id: str, strategy: str = "keep_latest", *, user_id: str | None = None
    ) -> Call[int]:
        """`keep_latest` (the newest checkpoint of each namespace survives) or `delete`; returns the count."""
        return th.thread_prune(thread_id, strategy, user_id=user_id)

    @endpoint
    def thread_summarize(self, thread_id: str) -> Call[Job]:
        """Summarise the thread's new messages into its scope's medallion (a job)."""
        return th.thread_summarize(thread_id)

    @endpoint
    def thread_storage(self, thread_id: str) -> Call[dict[str, Any]]:
        """Bytes by namespace and kind (state, writes, messages)."""
        return th.thread_storage(thread_id)

    # --- messages ----------------------------------------------------------------------------------------

    @endpoint
    def messages_append(
        self, thread_id: str, messages: Sequence[Mapping[str, Any] | Any], *, user_id: str | None = None
    ) -> Call[list[Message]]:
        """Append 1..1000 messages in order; each gets a message_id (if missing) and a seq."""
        return th.messages_append(thread_id, messages, user_id=user_id)

    @endpoint
    def messages_list(
        self,
        thread_id: str,
        *,
        role: str | None = None,
        search: str | None = None,
        after_seq: int | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        user_id: str | None = None,
    ) -> Call[Page[Message]]:
        """One page of a thread's messages in seq order; `search` is full text."""
        return th.messages_list(
            thread_id,
            role=role,
            search=search,
            after_seq=after_seq,
            before_seq=before_seq,
            limit=limit,
            cursor=cursor,
            user_id=user_id,
        )

    @endpoint
    def message_get(self, thread_id: str, message_id: str, *, user_id: str | None = None) -> Call[Message]:
        return th.message_get(thread_id, message_id, user_id=user_id)

    @endpoint
    def message_delete(self, thread_id: str, message_id: str, *, user_id: str | None = None) -> Call[None]:
        return th.message_delete(thread_id, message_id, user_id=user_id)

    @endpoint
    def messages_search(
        self,
        *,
        search: str | None = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        role: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Call[Page[Message]]:
        """Workspace-wide message search."""
        return th.messages_search(
            search=search, thread_id=thread_id, user_id=user_id, role=role, limit=limit, cursor=cursor
        )
