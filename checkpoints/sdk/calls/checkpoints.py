"""Request builders for checkpoints, pending writes and the workspace timeline (SPEC section 5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from checkpoints.integrity import CanonicalEncodingError, format_timestamp, record_checksum
from checkpoints.sdk.calls.base import (
    UNSET,
    Unset,
    body_of,
    params,
    parse_checkpoint,
    parse_checkpoint_page,
    parse_none,
    seg,
)
from checkpoints.sdk.calls.threads import _limit
from checkpoints.sdk.jsonvalue import NotJSONError, to_json, to_json_object
from checkpoints.sdk.models import Checkpoint, Diff, Page, PendingWrite, SaveResult
from checkpoints.sdk.transport import Call, Response

FRAMEWORKS = ("langgraph", "crewai", "autogen", "custom")


@dataclass(frozen=True)
class CheckpointDraft:
    """A checkpoint about to be saved, with every field of the hashed record explicit, so the SDK computes
    the same checksum the server will (`checkpoints.integrity`) and sends it along."""

    thread_id: str
    namespace: str
    checkpoint_id: str
    parent_id: str | None
    agent_id: str
    framework: str
    schema_version: str
    step_index: int
    step_name: str | None
    run_id: str | None
    state: Any
    context: dict[str, Any]
    metadata: dict[str, Any]
    created_at: datetime
    ttl_seconds: int | Unset | None = UNSET
    pinned: bool = False

    @classmethod
    def build(cls, **fields: Any) -> CheckpointDraft:
        """Normalise the documents to JSON once (checkpoints.sdk.jsonvalue): the JSON hashed here is the
        JSON sent and stored."""
        if fields.get("framework", "custom") not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}")
        if fields.get("state") is None:
            raise ValueError("state is required (it may be any JSON value except null)")
        fields["state"] = to_json(fields["state"], path="$.state")
        fields["context"] = to_json_object(fields.get("context") or {}, path="$.context")
        fields["metadata"] = to_json_object(fields.get("metadata") or {}, path="$.metadata")
        return cls(**fields)

    def record(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "namespace": self.namespace,
            "checkpoint_id": self.checkpoint_id,
            "parent_id": self.parent_id,
            "agent_id": self.agent_id,
            "framework": self.framework,
            "schema_version": self.schema_version,
            "step_index": self.step_index,
            "step_name": self.step_name,
            "run_id": self.run_id,
            "state": self.state,
            "context": self.context,
            "metadata": self.metadata,
            "handoff_target": None,
            "handoff_from": None,
            "created_at": format_timestamp(self.created_at),
        }

    @property
    def checksum(self) -> str:
        try:
            return record_checksum(self.record())
        except CanonicalEncodingError as exc:
            raise NotJSONError(f"the checkpoint cannot be encoded canonically: {exc}") from exc

    def body(self, *, with_parent: bool) -> dict[str, Any]:
        body = body_of(
            checkpoint_id=self.checkpoint_id,
            namespace=self.namespace,
            agent_id=self.agent_id,
            framework=self.framework,
            schema_version=self.schema_version,
            step_index=self.step_index,
            step_name=self.step_name,
            run_id=self.run_id,
            state=self.state,
            context=self.context,
            metadata=self.metadata,
            ttl_seconds=self.ttl_seconds,
            pinned=self.pinned,
            checksum=self.checksum,
            created_at=format_timestamp(self.created_at),
        )
        if with_parent:
            body["parent_id"] = self.parent_id
        return body

    def saved(self, response: Response) -> SaveResult:
        """The answer to a save made with include_state=false, completed with the documents sent and
        re-hashed: it proves the server stored exactly the record hashed here."""
        raw = dict(response.body)
        raw.update(state=self.state, context=self.context, metadata=self.metadata)
        return SaveResult(Checkpoint.from_dict(raw).verify(), created=response.status == 201)


def checkpoint_create(draft: CheckpointDraft, *, user_id: str | None = None) -> Call[SaveResult]:
    """POST with an explicit parent. Idempotent: the id is chosen client-side, and the server answers an
    identical retry with the stored checkpoint (200). `user_id`: the save is refused (404) in another end
    user's thread."""
    return Call(
        "POST",
        f"threads/{seg(draft.thread_id)}/checkpoints/",
        draft.saved,
        params=params(include_state=False, user_id=user_id),
        body=draft.body(with_parent=True),
        idempotent=True,
    )


def thread_state_put(
    draft: CheckpointDraft, *, if_match: str | None, user_id: str | None = None
) -> Call[SaveResult]:
    """PUT a new head (parent = the server's current head). With If-Match the parent is pinned to the
    head the draft was hashed against; 412 if it moved. Idempotent for the same reason as a POST.
    `user_id`: refused (404) in another end user's thread."""
    headers = {"If-Match": f'"{if_match}"'} if if_match is not None else {}
    return Call(
        "PUT",
        f"threads/{seg(draft.thread_id)}/state/",
        draft.saved,
        params=params(include_state=False, user_id=user_id),
        body=draft.body(with_parent=False),
        headers=headers,
        idempotent=True,
    )


def checkpoints_list(
    thread_id: str,
    *,
    namespace: str | None = None,
    agent_id: str | None = None,
    step_name: str | None = None,
    run_id: str | None = None,
    before: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    include_state: bool = False,
    include_tombstones: bool = False,
    limit: int | None = None,
    cursor: str | None = None,
    user_id: str | None = None,
) -> Call[Page[Checkpoint]]:
    query = params(
        user_id=user_id,
        namespace=namespace,
        agent_id=agent_id,
        step_name=step_name,
        run_id=run_id,
        before=before,
        metadata=to_json_object(metadata, path="$.metadata") if metadata is not None else None,
        include_state=include_state or None,
        include_tombstones=include_tombstones or None,
        limit=_limit(limit),
        cursor=cursor,
    )
    return Call(
        "GET", f"threads/{seg(thread_id)}/checkpoints/", parse_checkpoint_page, params=query, idempotent=True
    )


def _checkpoint_path(thread_id: str, checkpoint_id: str) -> str:
    return f"threads/{seg(thread_id)}/checkpoints/{seg(checkpoint_id)}/"


def checkpoint_get(thread_id: str, checkpoint_id: str, *, namespace: str | None = None) -> Call[Checkpoint]:
    return Call(
        "GET",
        _checkpoint_path(thread_id, checkpoint_id),
        parse_checkpoint,
        params=params(namespace=namespace),
        idempotent=True,
    )


def checkpoint_expire(thread_id: str, checkpoint_id: str, *, namespace: str | None = None) -> Call[None]:
    # A retry that finds a tombstone (410) means the first attempt did the work.
    return Call(
        "DELETE",
        _checkpoint_path(thread_id, checkpoint_id),
        parse_none,
        params=params(namespace=namespace),
        idempotent=True,
        done_on_retry=frozenset({410}),
    )


def checkpoint_set_ttl(
    thread_id: str,
    checkpoint_id: str,
    *,
    ttl_seconds: int | Unset | None = UNSET,
    pinned: bool | Unset = UNSET,
    namespace: str | None = None,
) -> Call[Checkpoint]:
    if ttl_seconds is UNSET and pinned is UNSET:
        raise ValueError("pass ttl_seconds (seconds from now, or None for no expiry) and/or pinned")
    return Call(
        "POST",
        _checkpoint_path(thread_id, checkpoint_id) + "ttl/",
        lambda r: Checkpoint.from_dict(r.body),
        params=params(namespace=namespace),
        body=body_of(ttl_seconds=ttl_seconds, pinned=pinned),
        idempotent=True,
    )


def checkpoint_handoff(
    thread_id: str,
    checkpoint_id: str,
    *,
    target_agent_id: str,
    context: Mapping[str, Any] | Unset = UNSET,
    ttl_seconds: int | Unset | None = UNSET,
    namespace: str | None = None,
) -> Call[Checkpoint]:
    # Not idempotent: every handoff creates a new checkpoint with a server-chosen id.
    body = body_of(
        target_agent_id=target_agent_id,
        context=to_json_object(context, path="$.context") if not isinstance(context, Unset) else UNSET,
        ttl_seconds=ttl_seconds,
    )
    return Call(
        "POST",
        _checkpoint_path(thread_id, checkpoint_id) + "handoff/",
        parse_checkpoint,
        params=params(namespace=namespace),
        body=body,
    )


def checkpoint_diff(
    thread_id: str,
    checkpoint_id: str,
    *,
    against: str | None = None,
    namespace: str | None = None,
    against_thread_id: str | None = None,
    against_namespace: str | None = None,
) -> Call[Diff]:
    query = params(
        namespace=namespace,
        against=against,
        against_thread_id=against_thread_id,
        against_namespace=against_namespace,
    )
    return Call(
        "GET",
        _checkpoint_path(thread_id, checkpoint_id) + "diff/",
        lambda r: Diff.from_dict(r.body),
        params=query,
        idempotent=True,
    )


def checkpoint_lineage(
    thread_id: str, checkpoint_id: str, *, namespace: str | None = None, limit: int | None = None
) -> Call[Page[Checkpoint]]:
    return Call(
        "GET",
        _checkpoint_path(thread_id, checkpoint_id) + "lineage/",
        parse_checkpoint_page,
        params=params(namespace=namespace, limit=_limit(limit)),
        idempotent=True,
    )


def _writes(response: Response) -> list[PendingWrite]:
    return [PendingWrite.from_dict(row) for row in response.body["results"]]


def pending_writes_list(
    thread_id: str, checkpoint_id: str, *, namespace: str = ""
) -> Call[list[PendingWrite]]:
    return Call(
        "GET",
        _checkpoint_path(thread_id, checkpoint_id) + "writes/",
        _writes,
        params=params(namespace=namespace),
        idempotent=True,
    )


def pending_writes_put(
    thread_id: str,
    checkpoint_id: str,
    *,
    task_id: str,
    writes: Sequence[Mapping[str, Any]],
    task_path: str = "",
    namespace: str = "",
) -> Call[list[PendingWrite]]:
    """Each write is `{channel, value, idx?, type?}`. Idempotent: a repeated write is a no-op (writes at a
    negative idx, LangGraph's special channels, replace the earlier one with the same value)."""
    items = []
    for position, write in enumerate(writes):
        item = {"channel": write["channel"], "value": to_json(write["value"], path=f"$.writes[{position}]")}
        if write.get("idx") is not None:
            item["idx"] = write["idx"]
        if write.get("type"):
            item["type"] = write["type"]
        items.append(item)
    return Call(
        "POST",
        _checkpoint_path(thread_id, checkpoint_id) + "writes/",
        _writes,
        params=params(namespace=namespace),
        body={"task_id": task_id, "task_path": task_path, "writes": items},
        idempotent=True,
    )


def checkpoints_timeline(
    *,
    agent_id: str | None = None,
    thread_id: str | None = None,
    handoff_target: str | None = None,
    framework: str | None = None,
    run_id: str | None = None,
    namespace: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    metadata: Mapping[str, Any] | None = None,
    include_state: bool = False,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[Checkpoint]]:
    query = params(
        agent_id=agent_id,
        thread_id=thread_id,
        handoff_target=handoff_target,
        framework=framework,
        run_id=run_id,
        namespace=namespace,
        created_after=created_after,
        created_before=created_before,
        metadata=to_json_object(metadata, path="$.metadata") if metadata is not None else None,
        include_state=include_state or None,
        limit=_limit(limit),
        cursor=cursor,
    )
    return Call("GET", "checkpoints/", parse_checkpoint_page, params=query, idempotent=True)


def checkpoint_get_by_id(checkpoint_id: str) -> Call[Checkpoint]:
    return Call("GET", f"checkpoints/{seg(checkpoint_id)}/", parse_checkpoint, idempotent=True)
