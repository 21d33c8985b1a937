"""Saving a checkpoint: the two save requests and the flow that resolves the parent, written once for
`checkpoint_save`, `thread_state_put` and the integrations (PyAgenity's checkpointer)."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from checkpoints.ids import new_id
from checkpoints.sdk.endpoints.base import Endpoints, endpoint, params, seg, with_params
from checkpoints.sdk.endpoints.checkpoints import checkpoint_get, checkpoints_list
from checkpoints.sdk.errors import Conflict, NotFound, PreconditionFailed, ValidationError
from checkpoints.sdk.flows import ClientMemory, Flow
from checkpoints.sdk.models import UNSET, Checkpoint, CheckpointDraft, Page, SaveResult, Unset
from checkpoints.sdk.transport import Call

MAX_HEAD_ATTEMPTS = 8


def save_call(
    method: str,
    path: str,
    draft: CheckpointDraft,
    body: dict[str, Any],
    *,
    user_id: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Call[SaveResult]:
    """A request saving `draft` (`body` is what its method sends of it). Idempotent: the id is chosen
    client-side, and the server answers an identical retry with the stored checkpoint (200). Answered without
    the state, which `draft.saved` completes with the documents sent. `user_id`: the save is refused (404) in
    another end user's thread."""
    return Call(
        method,
        path,
        draft.saved,
        params=params(include_state=False, user_id=user_id),
        body=body,
        headers=headers or {},
        idempotent=True,
    )


def checkpoint_create(draft: CheckpointDraft, *, user_id: str | None = None) -> Call[SaveResult]:
    """POST with an explicit parent (idempotent, see `save_call`)."""
    path = f"threads/{seg(draft.thread_id)}/checkpoints/"
    return save_call("POST", path, draft, draft.body(with_parent=True), user_id=user_id)


def thread_state_put(
    draft: CheckpointDraft, *, if_match: str | None, user_id: str | None = None
) -> Call[SaveResult]:
    """PUT a new head (parent = the server's current head). With If-Match the parent is pinned to the
    head the draft was hashed against; 412 if it moved. Idempotent, like every save (`save_call`)."""
    headers = {"If-Match": f'"{if_match}"'} if if_match is not None else {}
    path = f"threads/{seg(draft.thread_id)}/state/"
    return save_call("PUT", path, draft, draft.body(with_parent=False), user_id=user_id, headers=headers)


def arguments(values: Mapping[str, Any]) -> dict[str, Any]:
    """A public save method's arguments (its `locals()`), passed on by name: to `checkpoint_save`, and to
    checkpnt's `save_steps`."""
    return {name: value for name, value in values.items() if name != "self"}


def checkpoint_save(
    memory: ClientMemory,
    *,
    parent_id: str | Unset | None = UNSET,
    step_index: int | None = None,
    checkpoint_id: str | None = None,
    user_id: str | None = None,
    **fields: Any,
) -> Flow[SaveResult]:
    """Save with the whole record explicit (so the checksum is computed here and verified by the server).
    `fields` are the draft's (checkpoints.sdk.models.CheckpointRecord); those left out take its defaults.

    `parent_id` omitted: the namespace head, pinned with If-Match (a head that moves meanwhile is re-read and
    the save re-hashed, up to MAX_HEAD_ATTEMPTS). `parent_id=None`: a root. A parent id: that checkpoint
    (the server validates that it exists). The checkpoint id is chosen here (UUIDv7) unless given, which
    makes every attempt an idempotent retry of the same save.
    """
    thread_id: str = fields["thread_id"]
    namespace: str = fields.setdefault("namespace", "")
    fields["checkpoint_id"] = checkpoint_id or new_id()
    if not isinstance(parent_id, Unset):
        if step_index is None:
            step_index = 0
            if parent_id is not None:
                known = memory.step_of(thread_id, namespace, parent_id)
                if known is None:
                    parent: Checkpoint = yield checkpoint_get(thread_id, parent_id, namespace=namespace)
                    known = parent.step_index
                step_index = known + 1
        draft = CheckpointDraft.build(
            **fields, parent_id=parent_id, step_index=step_index, created_at=memory.clock.now()
        )
        saved: SaveResult = yield checkpoint_create(draft, user_id=user_id)
        memory.saw(saved.checkpoint, is_head=True)
        return saved

    for _attempt in range(MAX_HEAD_ATTEMPTS):
        head = memory.head(thread_id, namespace)
        if head is None:
            head = yield from _fetch_head(thread_id, namespace, user_id)
        draft = CheckpointDraft.build(
            **fields,
            parent_id=head.checkpoint_id if head else None,
            step_index=step_index if step_index is not None else (head.step_index + 1 if head else 0),
            created_at=memory.clock.now(),
        )
        try:
            saved = yield thread_state_put(
                draft, if_match=head.checkpoint_id if head else None, user_id=user_id
            )
        except PreconditionFailed:
            memory.forget_head(thread_id, namespace)
            continue
        except ValidationError as exc:
            # Without If-Match (no head known) a head created meanwhile becomes the parent on the server,
            # and the record no longer hashes to the checksum sent: re-read the head and try again.
            if head is None and _checksum_refused(exc):
                memory.forget_head(thread_id, namespace)
                continue
            raise
        memory.saw(saved.checkpoint, is_head=True)
        return saved
    raise Conflict(
        f"the head of {thread_id!r} kept moving; gave up after {MAX_HEAD_ATTEMPTS} attempts",
        details={"thread_id": thread_id, "namespace": namespace},
        status=0,
    )


def _checksum_refused(exc: ValidationError) -> bool:
    fields = exc.details.get("fields")
    return "checksum" in exc.details or (isinstance(fields, dict) and "checksum" in fields)


def _fetch_head(
    thread_id: str, namespace: str, user_id: str | None = None
) -> Generator[Call[Any], Any, Checkpoint | None]:
    """The newest readable checkpoint of the namespace, without its payload (one light request)."""
    try:
        page: Page[Checkpoint] = yield with_params(
            checkpoints_list(thread_id, namespace=namespace, limit=1), user_id=user_id
        )
    except NotFound:
        return None
    return page.results[0] if page.results else None


class SaveEndpoints(Endpoints):
    @endpoint
    def checkpoint_save(
        self,
        *,
        thread_id: str,
        agent_id: str,
        state: Any,
        namespace: str = "",
        checkpoint_id: str | None = None,
        parent_id: str | Unset | None = UNSET,
        framework: str = "custom",
        schema_version: str = "1.0",
        step_index: int | None = None,
        step_name: str | None = None,
        run_id: str | None = None,
        context: Any = None,
        metadata: Any = None,
        ttl_seconds: int | Unset | None = UNSET,
        pinned: bool = False,
    ) -> Flow[SaveResult]:
        """Save a checkpoint (the thread is created if missing), checksummed here and verified by the server.

        `parent_id` omitted: the namespace head; None: a root; an id: that checkpoint. `ttl_seconds`
        omitted: the workspace default; None: never expires. Values go through one JSON normalisation
        (datetimes become ISO strings, tuples lists, int keys strings; NaN is refused).
        """
        return checkpoint_save(self.memory, **arguments(locals()))

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
    ) -> Flow[SaveResult]:
        """Save a new head whose parent is the current head (If-Match guarded; a moved head is re-read)."""
        return checkpoint_save(self.memory, **arguments(locals()))
