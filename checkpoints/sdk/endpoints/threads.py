"""The API calls for threads and messages. Each builder is the one definition of its request;
`ThreadEndpoints` binds them as methods."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from checkpoints.ids import new_id
from checkpoints.sdk.endpoints.base import (
    Endpoints,
    body_of,
    delete_call,
    endpoint,
    get_call,
    list_params,
    params,
    parse_checkpoint,
    request,
    seg,
)
from checkpoints.sdk.jsonvalue import to_json_object
from checkpoints.sdk.models import UNSET, Annotation, Checkpoint, Job, Message, Page, Thread, Unset
from checkpoints.sdk.transport import Call, Response

# What a client may send of a `Message`: every field but those the server assigns (and the raw JSON).
_SERVER_ASSIGNED = frozenset({"seq", "thread_id", "created_at", "raw"})
MESSAGE_FIELDS = frozenset(field.name for field in dataclasses.fields(Message)) - _SERVER_ASSIGNED


def _thread(response: Response) -> Thread:
    return Thread.from_dict(response.body)


def _thread_page(response: Response) -> Page[Thread]:
    return Page.parse(response.body, Thread.from_dict)


def _message_page(response: Response) -> Page[Message]:
    return Page.parse(response.body, Message.from_dict)


def thread_create(
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
    # Not idempotent: a retry after a lost answer would meet its own thread as a 409 duplicate.
    body = body_of(
        thread_id=thread_id if thread_id is not None else UNSET,
        name=name if name is not None else UNSET,
        user_id=user_id if user_id is not None else UNSET,
        tags=list(tags) if tags is not None else UNSET,
        metadata=to_json_object(metadata, path="$.metadata") if metadata is not None else UNSET,
        scope=to_json_object(scope, path="$.scope") if scope is not None else UNSET,
        ttl_seconds=ttl_seconds,
    )
    return Call("POST", "threads/", _thread, body=body)


def threads_list(
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
    # The API's filter is `tag`, repeated for each tag.
    query = list_params({**locals(), "tag": list(tags) if tags else None}, "tags")
    return get_call("threads/", _thread_page, query)


def thread_get(thread_id: str, *, user_id: str | None = None) -> Call[Thread]:
    """A thread with message_count, checkpoint_count, storage_bytes and head. With `user_id`, only if
    it is that end user's thread (NotFound otherwise)."""
    return get_call(f"threads/{seg(thread_id)}/", _thread, params(user_id=user_id))


def thread_patch(thread_id: str, changes: Mapping[str, Any], *, user_id: str | None = None) -> Call[Thread]:
    """PATCH sets absolute values, so repeating it changes nothing more: idempotent."""
    body = to_json_object(dict(changes), path="$")
    query = params(user_id=user_id)
    return Call("PATCH", f"threads/{seg(thread_id)}/", _thread, params=query, body=body, idempotent=True)


def thread_delete(thread_id: str, *, user_id: str | None = None) -> Call[None]:
    """Erase the thread and everything under it (checkpoints, writes, messages)."""
    return delete_call(f"threads/{seg(thread_id)}/", user_id=user_id)


def thread_state(thread_id: str, *, namespace: str = "") -> Call[Checkpoint]:
    """The head checkpoint of the namespace, with its state (re-hashed). NotFound if none."""
    return get_call(f"threads/{seg(thread_id)}/state/", parse_checkpoint, params(namespace=namespace))


def thread_fork(
    thread_id: str,
    *,
    checkpoint_id: str | None = None,
    namespace: str | None = None,
    new_thread_id: str | None = None,
    name: str | None = None,
) -> Call[Thread]:
    """A new thread whose head is a copy of `checkpoint_id` (default: the head), with the messages up
    to it."""
    body = body_of(
        checkpoint_id=checkpoint_id if checkpoint_id is not None else UNSET,
        namespace=namespace if namespace is not None else UNSET,
        thread_id=new_thread_id if new_thread_id is not None else UNSET,
        name=name if name is not None else UNSET,
    )
    return Call("POST", f"threads/{seg(thread_id)}/fork/", _thread, body=body)


def thread_copy(thread_id: str, target_thread_id: str) -> Call[Thread]:
    """A full copy: every checkpoint (same ids), pending write and message. Conflict if the target
    exists."""
    return Call("POST", f"threads/{seg(thread_id)}/copy/", _thread, body={"thread_id": target_thread_id})


def thread_prune(thread_id: str, strategy: str = "keep_latest", *, user_id: str | None = None) -> Call[int]:
    """`keep_latest` (the newest checkpoint of each namespace survives) or `delete`; returns the count."""
    # Pruning twice prunes nothing more: idempotent.
    return Call(
        "POST",
        f"threads/{seg(thread_id)}/prune/",
        lambda r: int(r.body.get("pruned", 0)),
        params=params(user_id=user_id),
        body={"strategy": strategy},
        idempotent=True,
    )


def thread_summarize(thread_id: str) -> Call[Job]:
    """Summarise the thread's new messages into its scope's medallion (a job)."""
    return Call("POST", f"threads/{seg(thread_id)}/summarize/", lambda r: Job.from_dict(_job_body(r.body)))


def _job_body(body: Any) -> dict[str, Any]:
    return body["job"] if isinstance(body, dict) and isinstance(body.get("job"), dict) else body


def thread_storage(thread_id: str) -> Call[dict[str, Any]]:
    """Bytes by namespace and kind (state, writes, messages)."""
    return get_call(f"threads/{seg(thread_id)}/storage/", lambda r: r.body)


# --- messages ---------------------------------------------------------------------------------------------


def message_body(message: Mapping[str, Any] | Any) -> dict[str, Any]:
    """A message for `messages_append`: a mapping (or an object with those attributes) with `role` and
    `content`; a `message_id` is generated when missing, which makes the append safe to retry."""
    if isinstance(message, Mapping):
        data = dict(message)
    else:
        data = {name: getattr(message, name) for name in MESSAGE_FIELDS if hasattr(message, name)}
    unknown = set(data) - MESSAGE_FIELDS
    if unknown:
        raise ValueError(f"unknown message fields: {', '.join(sorted(unknown))}")
    data = {key: value for key, value in data.items() if value is not None}
    data.setdefault("message_id", new_id())
    return to_json_object(data, path="$.message")


def messages_append(
    thread_id: str, messages: Sequence[Mapping[str, Any] | Any], *, user_id: str | None = None
) -> Call[list[Message]]:
    """Append 1..1000 messages in order; each gets a message_id (if missing) and a seq."""
    # Idempotent: every message carries a message_id, and the server treats an identical message with a
    # known id as a no-op. `user_id`: refused (404) if the thread is another user's; a thread the append
    # creates is given that user.
    body = {"messages": [message_body(m) for m in messages]}
    return Call(
        "POST",
        f"threads/{seg(thread_id)}/messages/",
        lambda r: [Message.from_dict(row) for row in r.body["results"]],
        params=params(user_id=user_id),
        body=body,
        idempotent=True,
    )


def messages_list(
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
    query = list_params(locals(), "thread_id")
    return get_call(f"threads/{seg(thread_id)}/messages/", _message_page, query)


def message_get(thread_id: str, message_id: str, *, user_id: str | None = None) -> Call[Message]:
    return get_call(
        f"threads/{seg(thread_id)}/messages/{seg(message_id)}/",
        lambda r: Message.from_dict(r.body),
        params(user_id=user_id),
    )


def message_delete(thread_id: str, message_id: str, *, user_id: str | None = None) -> Call[None]:
    return delete_call(f"threads/{seg(thread_id)}/messages/{seg(message_id)}/", user_id=user_id)


def messages_search(
    *,
    search: str | None = None,
    thread_id: str | None = None,
    user_id: str | None = None,
    role: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[Message]]:
    """Workspace-wide message search."""
    return get_call("messages/", _message_page, list_params(locals()))


def annotation_create(
    thread_id: str,
    comment: str,
    *,
    verdict: str | None = None,
    checkpoint_id: str | None = None,
    namespace: str | None = None,
    user_id: str | None = None,
) -> Call[Annotation]:
    """Record a finding on the thread, or on one of its checkpoints (NotFound if it is not the thread's;
    `namespace` only when its id is in several)."""
    # Not idempotent: a retry after a lost answer would record the finding twice.
    body = body_of(
        comment=comment,
        verdict=verdict if verdict is not None else UNSET,
        checkpoint_id=checkpoint_id if checkpoint_id is not None else UNSET,
        namespace=namespace if namespace is not None else UNSET,
    )
    return Call(
        "POST",
        f"threads/{seg(thread_id)}/annotations/",
        lambda r: Annotation.from_dict(r.body),
        body=body,
        params=params(user_id=user_id),
    )


def annotations_list(
    thread_id: str, *, limit: int | None = None, cursor: str | None = None, user_id: str | None = None
) -> Call[Page[Annotation]]:
    """One page of the thread's annotations (on it and on its checkpoints), newest first."""
    query = list_params(locals(), "thread_id")
    return get_call(
        f"threads/{seg(thread_id)}/annotations/", lambda r: Page.parse(r.body, Annotation.from_dict), query
    )


def annotation_delete(thread_id: str, annotation_id: str, *, user_id: str | None = None) -> Call[None]:
    return delete_call(f"threads/{seg(thread_id)}/annotations/{seg(annotation_id)}/", user_id=user_id)


class ThreadEndpoints(Endpoints):
    thread_create = request(thread_create)
    threads_list = request(threads_list)
    thread_get = request(thread_get)
    thread_delete = request(thread_delete)
    thread_state = request(thread_state, remember="seen")
    thread_fork = request(thread_fork)
    thread_copy = request(thread_copy)
    thread_prune = request(thread_prune)
    thread_summarize = request(thread_summarize)
    thread_storage = request(thread_storage)
    messages_append = request(messages_append)
    messages_list = request(messages_list)
    message_get = request(message_get)
    message_delete = request(message_delete)
    messages_search = request(messages_search)
    annotation_create = request(annotation_create)
    annotations_list = request(annotations_list)
    annotation_delete = request(annotation_delete)

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
        return thread_patch(thread_id, changes, user_id=owner)
