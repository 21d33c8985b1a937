"""`CairnStore`: LangGraph's long-term memory store (BaseStore) backed by a Cairn server (docs/store.md).

    from checkpoints.sdk.langgraph import CairnStore

    store = CairnStore("http://127.0.0.1:8000", api_key)          # was InMemoryStore() / PostgresStore(...)
    graph = builder.compile(checkpointer=saver, store=store)

- `batch`/`abatch` send every operation of a batch in one request (`POST store/batch/`, 1000 operations per
  request), run by the server in order; the results come back in the same order.
- `ttl=TTLConfig(...)`: `default_ttl` (minutes) for puts without one, `refresh_on_read` for reads that do not
  say; the server hides expired items at once and sweeps them.
- `index=IndexConfig(embed=..., fields=[...])`: the store embeds the `fields` of every put value (default the
  whole value) and each search's `query` here, and sends the vectors; the server ranks by them. Without an
  `embed`, the server embeds (its configured model) when it has one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.client import Client
from checkpoints.sdk.client_pair import client_pair
from checkpoints.sdk.closing import AsyncClosing, Closing
from checkpoints.sdk.transport import Call

MAX_BATCH_OPS = 1000  # operations in one request (the server refuses more)


def _item(body: dict[str, Any], kind: type[Item] = Item) -> Any:
    fields = {
        "namespace": tuple(body["namespace"]),
        "key": body["key"],
        "value": body["value"],
        "created_at": datetime.fromisoformat(body["created_at"]),
        "updated_at": datetime.fromisoformat(body["updated_at"]),
    }
    if kind is SearchItem:
        return SearchItem(**fields, score=body.get("score"))
    return Item(**fields)


class _Embedder:
    """The client side of search by meaning: which texts of a put value are embedded (LangGraph's `fields`
    paths, `$` the whole value) and the embeddings of an `IndexConfig`."""

    def __init__(self, index: IndexConfig) -> None:
        self.embeddings = ensure_embeddings(index["embed"])
        self.fields = [
            (path, tokenize_path(path) if path != "$" else path) for path in index.get("fields") or ["$"]
        ]

    def texts(self, op: PutOp) -> list[str]:
        if op.value is None or op.index is False:
            return []
        paths = self.fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
        return [text for _path, field in paths for text in get_text_at_path(op.value, field)]


class _Batch:
    """One batch as requests: the operations' bodies (chunked), and the texts to embed before sending."""

    def __init__(self, ops: Sequence[Op], embedder: _Embedder | None) -> None:
        for op in ops:
            validate_op_namespace(op)
        self.ops = ops
        self.embedder = embedder
        self.put_texts = [embedder.texts(op) if embedder and isinstance(op, PutOp) else [] for op in ops]
        self.queries = [
            op.query if embedder and isinstance(op, SearchOp) and op.query else None for op in ops
        ]

    def bodies(self, documents: list[list[float]], queries: list[list[float]]) -> list[dict[str, Any]]:
        documents_left, queries_left = iter(documents), iter(queries)
        bodies = []
        for op, texts, query in zip(self.ops, self.put_texts, self.queries, strict=True):
            body = _body(op)
            if texts:
                body["vectors"] = [next(documents_left) for _ in texts]
            elif self.embedder is not None and isinstance(op, PutOp):
                body["index"] = False  # nothing of this value to embed here: the server must not either
            if query is not None:
                body["query_vector"] = next(queries_left)
            bodies.append(body)
        return bodies

    def all_texts(self) -> list[str]:
        return [text for texts in self.put_texts for text in texts]

    def all_queries(self) -> list[str]:
        return [query for query in self.queries if query is not None]

    def vectors(self) -> tuple[list[list[float]], list[list[float]]]:
        """The embeddings of the put texts and of the search queries (none without an embedder)."""
        if self.embedder is None:
            return [], []
        texts, embeddings = self.all_texts(), self.embedder.embeddings
        documents = embeddings.embed_documents(texts) if texts else []
        return documents, [embeddings.embed_query(query) for query in self.all_queries()]

    async def avectors(self) -> tuple[list[list[float]], list[list[float]]]:
        """`vectors`, by the embeddings' async methods."""
        if self.embedder is None:
            return [], []
        texts, embeddings = self.all_texts(), self.embedder.embeddings
        documents = await embeddings.aembed_documents(texts) if texts else []
        return documents, [await embeddings.aembed_query(query) for query in self.all_queries()]

    def calls(self, bodies: list[dict[str, Any]]) -> list[Call[list[Any]]]:
        return [
            Call(
                "POST",
                "store/batch/",
                lambda r: list(r.body["results"]),
                body={"ops": bodies[start : start + MAX_BATCH_OPS]},
                idempotent=True,
            )
            for start in range(0, len(bodies), MAX_BATCH_OPS)
        ]

    def results(self, answers: Iterable[Any]) -> list[Result]:
        results: list[Result] = []
        for op, answer in zip(self.ops, answers, strict=True):
            if isinstance(op, GetOp):
                results.append(_item(answer) if answer is not None else None)
            elif isinstance(op, SearchOp):
                results.append([_item(item, SearchItem) for item in answer])
            elif isinstance(op, ListNamespacesOp):
                results.append([tuple(namespace) for namespace in answer])
            else:
                results.append(None)
        return results


def _body(op: Op) -> dict[str, Any]:
    if isinstance(op, GetOp):
        return {"op": "get", "namespace": list(op.namespace), "key": op.key, "refresh_ttl": op.refresh_ttl}
    if isinstance(op, PutOp):
        body: dict[str, Any] = {
            "op": "put",
            "namespace": list(op.namespace),
            "key": op.key,
            "value": op.value,
        }
        body.update(index=op.index, ttl=op.ttl)
        return body
    if isinstance(op, SearchOp):
        return {
            "op": "search",
            "namespace_prefix": list(op.namespace_prefix),
            "filter": op.filter,
            "limit": op.limit,
            "offset": op.offset,
            "query": op.query,
            "refresh_ttl": op.refresh_ttl,
        }
    if isinstance(op, ListNamespacesOp):
        body = {"op": "list_namespaces", "max_depth": op.max_depth, "limit": op.limit, "offset": op.offset}
        for condition in op.match_conditions or ():
            if condition.match_type in body:
                raise ValueError(f"Cairn takes at most one {condition.match_type} condition per listing.")
            body[condition.match_type] = list(condition.path)
        return body
    raise TypeError(f"Unknown store operation: {type(op).__name__}")


class CairnStore(BaseStore, Closing, AsyncClosing):
    """LangGraph store backed by a Cairn server (sync and async methods)."""

    supports_ttl = True

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.client, self.async_client = client_pair(base_url, api_key, client, async_client)
        self.index_config = index
        self.ttl_config = ttl
        self._embedder = _Embedder(index) if index and index.get("embed") else None

    @classmethod
    def from_env(cls, **options: Any) -> CairnStore:
        """A store for `CAIRN_URL` with the key in `CAIRN_API_KEY`."""
        return cls(client=Client.from_env(), async_client=AsyncClient.from_env(), **options)

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        await self.async_client.aclose()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        batch = _Batch(list(ops), self._embedder)
        if not batch.ops:
            return []
        documents, queries = batch.vectors()
        answers = [
            answer
            for call in batch.calls(batch.bodies(documents, queries))
            for answer in self.client.send(call)
        ]
        return batch.results(answers)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        batch = _Batch(list(ops), self._embedder)
        if not batch.ops:
            return []
        documents, queries = await batch.avectors()
        answers: list[Any] = []
        for call in batch.calls(batch.bodies(documents, queries)):
            answer: list[Any] = await self.async_client.send(call)
            answers.extend(answer)
        return batch.results(answers)


class AsyncCairnStore(CairnStore):
    """The same store under the name async LangGraph code expects: every `a*` method is natively async
    (httpx.AsyncClient), and the sync methods keep working too."""
