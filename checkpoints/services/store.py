"""The LangGraph store (docs/store.md): items under namespaces in a workspace, read and written by the
Agent Protocol's routes and by `POST store/batch/`, which runs LangGraph's batch of operations in order.

An expired item is invisible to every read at once (`StoreItem.objects.live()`); reads push a TTL back
(`refresh_ttl`, on by default as in LangGraph's TTLConfig); `store_sweep_expired` (beat) deletes them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Left
from django.db.models.lookups import Exact
from django.utils import timezone

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import StoreItem, Workspace
from checkpoints.models.store import NAMESPACE_SEPARATOR
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.embedding import embeds_in_background, store_item_embed_later
from checkpoints.services.store_filters import filter_condition
from checkpoints.services.store_index import ranked, vectors_changed
from checkpoints.services.store_vectors import item_vectors

Namespace = Sequence[str]
WILDCARD = "*"


def namespace_text(labels: Sequence[str]) -> str:
    return NAMESPACE_SEPARATOR.join(labels)


def within(prefix: Sequence[str]) -> Q:
    """Items whose namespace is `prefix` or below it (every item for the empty prefix)."""
    if not prefix:
        return Q()
    text = namespace_text(prefix)
    below = Exact(Left("namespace", len(text) + 1), text + NAMESPACE_SEPARATOR)
    return Q(namespace=text) | Q(below)


def item_representation(item: StoreItem, score: float | None = None) -> dict[str, Any]:
    """An item as the Agent Protocol answers it."""
    body: dict[str, Any] = {
        "namespace": item.namespace_labels,
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
    }
    if score is not None:
        body["score"] = score
    return body


def check_value(value: Any) -> None:
    """Refuse what JSON allows but the databases cannot store alike: NUL in any string or object key."""
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            if "\x00" in current:
                message = "value may not contain NUL characters."
                raise ValidationFailed(message, {"fields": {"value": [message]}})
        elif isinstance(current, dict):
            pending.extend(current.keys())
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)


def _live(workspace: Workspace, now: datetime) -> Any:
    return StoreItem.objects.filter(workspace=workspace).live(now)


def _refresh(items: Iterable[StoreItem], now: datetime) -> None:
    """Push back the TTL of items read, one UPDATE per distinct TTL."""
    by_ttl: dict[float, list[int]] = defaultdict(list)
    for item in items:
        if item.ttl_minutes is not None:
            by_ttl[item.ttl_minutes].append(item.pk)
            item.expires_at = now + timedelta(minutes=item.ttl_minutes)
    for ttl, pks in by_ttl.items():
        StoreItem.objects.filter(pk__in=pks).update(expires_at=now + timedelta(minutes=ttl))


def _audit(workspace: Workspace, actor: Actor, namespace: Namespace, key: str, *, action: str) -> None:
    audit_record(
        workspace=workspace,
        actor=actor,
        action=action,
        target_type="store_item",
        target_id=f"{namespace_text(namespace)}/{key}",
        details={"namespace": list(namespace), "key": key},
    )


# --- operations ------------------------------------------------------------------------------------------


def store_get(
    *, workspace: Workspace, namespace: Namespace, key: str, refresh_ttl: bool | None = None
) -> StoreItem | None:
    now = timezone.now()
    item = _live(workspace, now).filter(namespace=namespace_text(namespace), key=key).first()
    if item is not None and refresh_ttl is not False:
        _refresh([item], now)
    return item


@transaction.atomic
def store_put(
    *,
    workspace: Workspace,
    actor: Actor,
    namespace: Namespace,
    key: str,
    value: dict[str, Any] | None,
    index: list[str] | bool | None = None,
    ttl: float | None = None,
    vectors: list[list[float]] | None = None,
) -> None:
    """Insert or replace an item (value None deletes it). An expired item is replaced as a new one."""
    if value is None:
        store_delete(workspace=workspace, actor=actor, namespace=namespace, key=key)
        return
    check_value(value)
    now = timezone.now()
    text = namespace_text(namespace)
    later = not vectors and index is not False and embeds_in_background()
    fields = {
        "value": value,
        "updated_at": now,
        "ttl_minutes": ttl,
        "expires_at": now + timedelta(minutes=ttl) if ttl is not None else None,
        "vectors": None if later else item_vectors(value, index=index, vectors=vectors),
    }
    same = StoreItem.objects.filter(workspace=workspace, namespace=text, key=key)
    if not same.live(now).update(**fields):
        same.delete()  # an expired item under this key: the new one starts afresh
        try:
            with transaction.atomic():
                StoreItem.objects.create(
                    workspace=workspace, namespace=text, key=key, created_at=now, **fields
                )
        except IntegrityError:  # a concurrent put created it first: this put replaces it
            same.update(**fields)
    if later:
        item_pk = same.values_list("pk", flat=True).get()
        store_item_embed_later(item_pk=item_pk, updated_at=now, index=index)
    vectors_changed(workspace.pk)
    _audit(workspace, actor, namespace, key, action="store.item.put")


@transaction.atomic
def store_delete(*, workspace: Workspace, actor: Actor, namespace: Namespace, key: str) -> bool:
    """Delete an item; deleting one that does not exist is not an error (False)."""
    deleted, _ = StoreItem.objects.filter(
        workspace=workspace, namespace=namespace_text(namespace), key=key
    ).delete()
    if deleted:
        vectors_changed(workspace.pk)
        _audit(workspace, actor, namespace, key, action="store.item.delete")
    return bool(deleted)


def store_search(
    *,
    workspace: Workspace,
    namespace_prefix: Namespace = (),
    filter: dict[str, Any] | None = None,  # the protocol's name
    limit: int = 10,
    offset: int = 0,
    query: str | None = None,
    refresh_ttl: bool | None = None,
    query_vector: list[float] | None = None,
) -> list[tuple[StoreItem, float | None]]:
    """Items under `namespace_prefix` matching `filter`, newest update first; with a `query` (or the
    client's `query_vector`) and indexed items, ranked by meaning with their scores (docs/store.md)."""
    now = timezone.now()
    items = _live(workspace, now).filter(within(namespace_prefix)).filter(filter_condition(filter))
    if query is not None or query_vector is not None:
        found = ranked(
            workspace,
            items,
            prefix=namespace_text(namespace_prefix),
            query=query,
            query_vector=query_vector,
            limit=limit,
            offset=offset,
            filtered=bool(filter),
        )
    else:
        page = list(items.order_by("-updated_at", "-pk")[offset : offset + limit])
        found = [(item, None) for item in page]
    if refresh_ttl is not False:
        _refresh([item for item, _score in found], now)
    return found


def store_list_namespaces(
    *,
    workspace: Workspace,
    prefix: Namespace | None = None,
    suffix: Namespace | None = None,
    max_depth: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[list[str]]:
    """The distinct namespaces of live items matching `prefix` and `suffix` (`*` matches any one label),
    cut to `max_depth` labels, in order."""
    literal = list(prefix or [])
    if WILDCARD in literal:
        literal = literal[: literal.index(WILDCARD)]
    texts = (
        _live(workspace, timezone.now())
        .filter(within(literal))
        .order_by("namespace")
        .values_list("namespace", flat=True)
        .distinct()
    )
    found: set[tuple[str, ...]] = set()
    for text in texts.iterator():
        labels = tuple(text.split(NAMESPACE_SEPARATOR))
        if prefix and not _matches(labels, prefix):
            continue
        if suffix and not _matches(labels[::-1], suffix[::-1]):
            continue
        found.add(labels[:max_depth] if max_depth is not None else labels)
    return [list(labels) for labels in sorted(found)[offset : offset + limit]]


def _matches(labels: Namespace, pattern: Sequence[str]) -> bool:
    if len(labels) < len(pattern):
        return False
    return all(want in (WILDCARD, have) for have, want in zip(labels, pattern, strict=False))


@transaction.atomic
def store_batch(*, workspace: Workspace, actor: Actor, ops: Sequence[dict[str, Any]]) -> list[Any]:
    """LangGraph's batch: the operations in order, in one transaction; one result per operation."""
    results: list[Any] = []
    for op in ops:
        kind = op["op"]
        if kind == "get":
            item = store_get(
                workspace=workspace, namespace=op["namespace"], key=op["key"], refresh_ttl=op["refresh_ttl"]
            )
            results.append(item_representation(item) if item is not None else None)
        elif kind == "put":
            store_put(workspace=workspace, actor=actor, **_without(op, "op"))
            results.append(None)
        elif kind == "search":
            found = store_search(workspace=workspace, **_without(op, "op"))
            results.append([item_representation(item, score) for item, score in found])
        else:
            results.append(store_list_namespaces(workspace=workspace, **_without(op, "op")))
    return results


def _without(op: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: value for name, value in op.items() if name not in names}


EXPORT_BATCH = 500


def store_export(
    *, workspace: Workspace, namespace_prefix: Namespace = (), now: datetime | None = None
) -> Iterator[dict[str, Any]]:
    """Every live item under `namespace_prefix` (namespace, key, value, timestamps, `expires_at`; never
    the vectors), in the order they were first written, read in keyset batches so no cursor stays open.
    Reading them does not push a TTL back."""
    items = _live(workspace, now or timezone.now()).filter(within(namespace_prefix)).order_by("pk")
    after = 0
    while True:
        batch = list(items.filter(pk__gt=after).defer("vectors")[:EXPORT_BATCH])
        for item in batch:
            body = item_representation(item)
            body["expires_at"] = item.expires_at.isoformat() if item.expires_at else None
            yield body
        if len(batch) < EXPORT_BATCH:
            return
        after = batch[-1].pk


def store_sweep_expired(*, now: datetime | None = None, batch_size: int | None = None) -> int:
    """Delete expired items in every workspace, in batches (beat). Returns how many went."""
    now = now or timezone.now()
    batch_size = batch_size or settings.CAIRN_SWEEP_BATCH_SIZE
    total = 0
    while True:
        pks = list(StoreItem.objects.expired(now).order_by("pk").values_list("pk", flat=True)[:batch_size])
        if not pks:
            return total
        deleted, _ = StoreItem.objects.filter(pk__in=pks, expires_at__lte=now).delete()
        total += deleted
