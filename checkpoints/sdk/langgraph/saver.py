"""`CairnSaver`: a LangGraph checkpointer (BaseCheckpointSaver) that stores checkpoints in Cairn.

    from checkpoints.sdk.langgraph import CairnSaver

    checkpointer = CairnSaver("http://127.0.0.1:8000", api_key)   # was InMemorySaver() / PostgresSaver(...)
    graph = builder.compile(checkpointer=checkpointer)

Sync methods use a blocking `Client`, async methods an `AsyncClient`, so one saver serves `invoke` and
`ainvoke` alike without blocking an event loop. Every operation is written once, as a flow
(checkpoints.sdk.flows) both clients drive.

- `put` sends the whole record's checksum but only the channels LangGraph marks as changed (`new_versions`);
  the others are named by version and copied server-side from the parent, so each stored checkpoint is whole
  (see checkpoints.services.langgraph). If the parent no longer holds them, the saver sends everything.
- The parent is the checkpoint named in the config (LangGraph's), never the checkpoint itself.
- `get_tuple`/`list` re-hash every checkpoint they return (ChecksumMismatch on a difference).
- `list` honours `filter` (metadata containment), `before`, `limit`, one namespace or all of them, one thread
  or the whole workspace (config None), in LangGraph's order (checkpoint id, newest first).
- `put_writes` stores LangGraph's special channels at their fixed negative indexes (WRITES_IDX_MAP); writes
  may arrive before their checkpoint is saved.
- `delete_thread` erases the thread; `delete_for_runs` turns the runs' checkpoints into tombstones;
  `copy_thread` copies every checkpoint (same ids) and write; `prune` keeps the latest per namespace or
  deletes all.
"""

from __future__ import annotations

import functools
import random
import re
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.base import Checkpoint as LGCheckpoint
from langgraph.checkpoint.serde.base import SerializerProtocol

from checkpoints.sdk import flows
from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.client import Client
from checkpoints.sdk.client_pair import client_pair
from checkpoints.sdk.closing import AsyncClosing, Closing
from checkpoints.sdk.endpoints import checkpoints as cp_calls
from checkpoints.sdk.endpoints import langgraph as lg_calls
from checkpoints.sdk.endpoints import threads as th_calls
from checkpoints.sdk.errors import NotFound, PreconditionFailed
from checkpoints.sdk.langgraph.values import MessageForms, ValueCodec
from checkpoints.sdk.langgraph.write_lanes import WriteLanes
from checkpoints.sdk.models import UNSET, Checkpoint, CheckpointDraft, Page, SaveResult, Unset
from checkpoints.sdk.transport import Call

ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")
PRUNE_STRATEGIES = ("keep_latest", "delete")
MAX_PAGE = 500


def _thread_id(config: RunnableConfig) -> str:
    thread_id = str(config["configurable"]["thread_id"])
    if not ID_PATTERN.match(thread_id):
        raise ValueError(f"thread_id {thread_id!r} is not a Cairn id: use 1-128 of A-Z a-z 0-9 . _ : -")
    return thread_id


def _short(value: Any) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= 255 and "\x00" not in value else None


@dataclass(frozen=True)
class _Stored:
    values: dict[str, Any]
    versions: dict[str, Any]

    def holds(self, channel: str, version: Any) -> bool:
        return channel in self.values and version is not None and self.versions.get(channel) == version


class StoredChannels:
    """The stored (encoded) channel values of the checkpoints this saver recently saved or loaded.

    A put names its unchanged channels for the server to copy from the parent; using the parent's stored form
    for them here makes the checksum match what the server composes. A miss only costs a fallback save
    of every value.
    """

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, str, str], _Stored] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, thread_id: str, namespace: str, checkpoint_id: str, state: dict[str, Any]) -> None:
        entry = _Stored(dict(state["channel_values"]), dict(state.get("channel_versions") or {}))
        with self._lock:
            self._entries[(thread_id, namespace, checkpoint_id)] = entry
            self._entries.move_to_end((thread_id, namespace, checkpoint_id))
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def get(self, thread_id: str, namespace: str, checkpoint_id: str) -> _Stored | None:
        with self._lock:
            return self._entries.get((thread_id, namespace, checkpoint_id))


class _Listing:
    """One `list`/`alist` walk, written once: the request for the next page (None when the walk is over) and
    the tuples of a page, decoded as they are consumed, up to `limit`."""

    def __init__(self, saver: CairnSaver, query: dict[str, Any], limit: int | None) -> None:
        self.saver = saver
        self.query = query
        self.remaining = limit
        self.cursor: str | None = None
        self.done = limit is not None and limit <= 0

    def next_call(self) -> Call[Page[dict[str, Any]]] | None:
        if self.done:
            return None
        size = self.saver.page_size if self.remaining is None else max(1, min(self.remaining, MAX_PAGE))
        return lg_calls.langgraph_tuples(**self.query, limit=size, cursor=self.cursor)

    def take(self, page: Page[dict[str, Any]]) -> Iterator[CheckpointTuple]:
        self.cursor = page.next_cursor
        self.done = not self.cursor
        for row in page.results:
            yield self.saver._tuple(row)
            if self.remaining is not None:
                self.remaining -= 1
                if self.remaining <= 0:
                    self.done = True
                    return


class CairnSaver(BaseCheckpointSaver[str], Closing, AsyncClosing):
    """LangGraph checkpointer backed by a Cairn server (sync and async methods)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
        serde: SerializerProtocol | None = None,
        agent_id: str = "langgraph",
        ttl_seconds: int | Unset | None = UNSET,
        page_size: int = 100,
    ) -> None:
        super().__init__(serde=serde)
        self.client, self.async_client = client_pair(base_url, api_key, client, async_client)
        self.agent_id = agent_id
        self.ttl_seconds = ttl_seconds
        self.page_size = max(1, min(page_size, MAX_PAGE))
        self._stored = StoredChannels()
        self._message_forms = MessageForms()
        self._write_lanes = WriteLanes()

    @classmethod
    def from_env(cls, **options: Any) -> CairnSaver:
        """A saver for `CAIRN_URL` with the key in `CAIRN_API_KEY`."""
        client = Client.from_env()
        return cls(client=client, async_client=AsyncClient.from_env(), **options)

    # --- lifecycle -------------------------------------------------------------------------------------

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        await self.async_client.aclose()

    # --- encoding --------------------------------------------------------------------------------------

    @property
    def values(self) -> ValueCodec:
        # Built from self.serde each time: with_allowlist() clones the saver with another serde.
        return ValueCodec(self.serde, forms=self._message_forms)

    @property
    def metadata_codec(self) -> ValueCodec:
        return ValueCodec(self.serde, allow_nul=False)

    def _draft(
        self,
        config: RunnableConfig,
        checkpoint: LGCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> CheckpointDraft:
        values = self.values
        state: dict[str, Any] = {
            key: values.encode(value)
            for key, value in checkpoint.items()
            if key not in ("id", "channel_values")
        }
        namespace = config["configurable"].get("checkpoint_ns", "")
        parent_id = config["configurable"].get("checkpoint_id") or None
        base = self._stored.get(_thread_id(config), namespace, parent_id) if parent_id else None
        versions = checkpoint["channel_versions"]
        encoded = {}
        for name, value in checkpoint["channel_values"].items():
            if base is not None and name not in new_versions and base.holds(name, versions.get(name)):
                # The parent's stored form: exactly what the server will copy when it inherits the value,
                # so the checksum computed here matches (re-encoding a restored value may not be
                # byte-identical: a datetime's tzinfo, a tuple that came back as a list).
                encoded[name] = base.values[name]
            else:
                encoded[name] = values.encode(value)
        state["channel_values"] = encoded
        merged = cast(dict[str, Any], get_checkpoint_metadata(config, metadata))
        step = merged.get("step")
        return CheckpointDraft.build(
            exact_json=True,  # the codec's output, and the parent's stored values
            thread_id=_thread_id(config),
            namespace=namespace,
            checkpoint_id=checkpoint["id"],
            parent_id=parent_id,
            agent_id=self.agent_id,
            framework="langgraph",
            schema_version=f"langgraph.v{checkpoint.get('v', 1)}",
            step_index=step if type(step) is int else 0,
            step_name=_short(merged.get("source")),
            run_id=_short(merged.get("run_id")),
            state=state,
            context={},
            metadata=self.metadata_codec.encode(merged),
            created_at=self.client.memory.clock.now(),
            ttl_seconds=self.ttl_seconds,
        )

    def _tuple(self, row: dict[str, Any]) -> CheckpointTuple:
        record = Checkpoint.from_dict(row).verify()
        state = row.get("state")
        if not isinstance(state, dict) or not isinstance(state.get("channel_values"), dict):
            raise ValueError(f"checkpoint {record.checkpoint_id!r} is not a LangGraph checkpoint")
        self._stored.put(record.thread_id, record.namespace, record.checkpoint_id, state)
        values = self.values
        checkpoint = {key: values.decode(value) for key, value in state.items() if key != "channel_values"}
        checkpoint["id"] = record.checkpoint_id
        checkpoint["channel_values"] = {name: values.decode(v) for name, v in state["channel_values"].items()}
        where = {"thread_id": record.thread_id, "checkpoint_ns": record.namespace}
        return CheckpointTuple(
            config={"configurable": {**where, "checkpoint_id": record.checkpoint_id}},
            checkpoint=cast(LGCheckpoint, checkpoint),
            metadata=cast(CheckpointMetadata, self.metadata_codec.decode(row.get("metadata") or {})),
            parent_config={"configurable": {**where, "checkpoint_id": record.parent_id}}
            if record.parent_id
            else None,
            pending_writes=[
                (w["task_id"], w["channel"], values.decode(w["value"])) for w in row.get("pending_writes", [])
            ],
        )

    # --- flows (one implementation, driven by the sync and the async client) -----------------------------

    def _put_flow(
        self,
        config: RunnableConfig,
        checkpoint: LGCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> flows.Flow[RunnableConfig]:
        draft = self._draft(config, checkpoint, metadata, new_versions)
        versions = checkpoint["channel_versions"]
        inherit = {
            name: versions[name]
            for name in checkpoint["channel_values"]
            if name not in new_versions and name in versions
        }
        saved: SaveResult
        if draft.parent_id and inherit:
            try:
                saved = yield lg_calls.langgraph_save(draft, inherit=inherit)
            except PreconditionFailed:
                # The parent does not hold those versions (expired, pruned, written elsewhere): send all.
                saved = yield lg_calls.langgraph_save(draft, inherit=None)
        else:
            saved = yield lg_calls.langgraph_save(draft, inherit=None)
        self._stored.put(draft.thread_id, draft.namespace, draft.checkpoint_id, draft.state)
        return {
            "configurable": {
                "thread_id": saved.checkpoint.thread_id,
                "checkpoint_ns": saved.checkpoint.namespace,
                "checkpoint_id": saved.checkpoint.checkpoint_id,
            }
        }

    def _get_tuple_flow(self, config: RunnableConfig) -> flows.Flow[CheckpointTuple | None]:
        page: Page[dict[str, Any]] = yield lg_calls.langgraph_tuples(
            thread_id=_thread_id(config),
            namespace=config["configurable"].get("checkpoint_ns", ""),
            checkpoint_id=get_checkpoint_id(config) or None,
            limit=1,
        )
        return self._tuple(page.results[0]) if page.results else None

    def _put_writes_call(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> Call[Any]:
        return cp_calls.task_writes_put(
            _thread_id(config), self._task_writes(config, writes, task_id, task_path)
        )

    def _task_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> dict[str, Any]:
        values = self.values
        items = [
            {"channel": channel, "value": values.encode(value), "idx": WRITES_IDX_MAP.get(channel, position)}
            for position, (channel, value) in enumerate(writes)
        ]
        return cp_calls.pending_writes_task(
            cast(str, config["configurable"]["checkpoint_id"]),
            task_id=task_id,
            writes=items,
            task_path=task_path,
            namespace=config["configurable"].get("checkpoint_ns", ""),
        )

    async def _send_writes(self, thread_id: str, tasks: list[dict[str, Any]]) -> None:
        """One task's writes to its checkpoint's writes endpoint; several tasks' in one request."""
        if len(tasks) == 1:
            await self.async_client.send(cp_calls.task_writes_put(thread_id, tasks[0]))
        else:
            await self.async_client.send(lg_calls.langgraph_writes(thread_id, tasks))

    @staticmethod
    def _ignore_missing(call: Call[Any]) -> flows.Flow[None]:
        try:
            yield call
        except NotFound:
            return

    def _delete_for_runs_flow(self, run_ids: Sequence[str]) -> flows.Flow[None]:
        ids = sorted({str(run_id) for run_id in run_ids})
        for start in range(0, len(ids), lg_calls.MAX_RUN_IDS):
            yield lg_calls.langgraph_delete_runs(ids[start : start + lg_calls.MAX_RUN_IDS])

    def _copy_thread_flow(self, source_thread_id: str, target_thread_id: str) -> flows.Flow[None]:
        yield from self._ignore_missing(th_calls.thread_copy(str(source_thread_id), str(target_thread_id)))

    def _prune_flow(self, thread_ids: Sequence[str], strategy: str) -> flows.Flow[None]:
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(PRUNE_STRATEGIES)}, got {strategy!r}")
        for thread_id in thread_ids:
            yield from self._ignore_missing(th_calls.thread_prune(str(thread_id), strategy))

    def _listing(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> _Listing:
        configurable = config["configurable"] if config else {}
        query = {
            "thread_id": _thread_id(cast(RunnableConfig, config))
            if config and "thread_id" in configurable
            else None,
            "namespace": configurable.get("checkpoint_ns"),
            "checkpoint_id": configurable.get("checkpoint_id") or None,
            "before": get_checkpoint_id(before) if before else None,
            "metadata": self.metadata_codec.encode(filter) if filter else None,
        }
        return _Listing(self, query, limit)

    # --- sync API --------------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named in the config, or the newest of its thread and namespace; None if missing."""
        return self.client.run(self._get_tuple_flow(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, fetched page by page as the iterator is consumed."""
        listing = self._listing(config, filter, before, limit)
        while (call := listing.next_call()) is not None:
            yield from listing.take(self.client.send(call))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: LGCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint whose parent is the config's checkpoint_id; returns the config naming it."""
        return self.client.run(self._put_flow(config, checkpoint, metadata, new_versions))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store a task's writes against the config's checkpoint (which need not be saved yet)."""
        self.client.send(self._put_writes_call(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Erase the thread and everything under it (a no-op if it does not exist)."""
        self.client.run(self._ignore_missing(th_calls.thread_delete(str(thread_id))))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) of these runs: they become tombstones."""
        self.client.run(self._delete_for_runs_flow(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint (same ids) and write of a thread to a new thread."""
        self.client.run(self._copy_thread_flow(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`keep_latest`: only the newest checkpoint of each namespace survives; `delete`: none does."""
        self.client.run(self._prune_flow(thread_ids, strategy))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """`<counter>.<random>`: increasing, and unique across the branches a fork creates."""
        if current is None:
            counter = 0
        elif isinstance(current, int):
            counter = current
        else:
            counter = int(str(current).split(".")[0])
        return f"{counter + 1:032}.{random.random():016}"  # nosec B311 # keeps fork versions apart, not a secret

    # --- async API -------------------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.async_client.run(self._get_tuple_flow(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        listing = self._listing(config, filter, before, limit)
        while (call := listing.next_call()) is not None:
            for item in listing.take(await self.async_client.send(call)):
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: LGCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self.async_client.run(self._put_flow(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        thread_id = _thread_id(config)
        task = self._task_writes(config, writes, task_id, task_path)
        send = functools.partial(self._send_writes, thread_id)
        await self._write_lanes.write(thread_id, task, send, most=lg_calls.MAX_WRITE_TASKS)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.async_client.run(self._ignore_missing(th_calls.thread_delete(str(thread_id))))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self.async_client.run(self._delete_for_runs_flow(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self.async_client.run(self._copy_thread_flow(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self.async_client.run(self._prune_flow(thread_ids, strategy))


class AsyncCairnSaver(CairnSaver):
    """The same saver under the name LangGraph users expect for async graphs (`ainvoke`, `astream`): every
    `a*` method is natively async (httpx.AsyncClient), and the sync methods keep working too."""
