"""Medallions by meaning (docs/medallions.md, "Search by meaning"): each version's text is embedded when it
is written (inline, or by a Celery task for a remote provider: checkpoints/services/embedding.py), and
`medallions_search` ranks a scope's medallions by cosine similarity to a query.

A workspace holds few medallions (one active per scope), so a search reads the vectors of the medallions
its scope and status select and ranks them with numpy, exactly; no per-process snapshot as for the store.
Medallions not embedded (written before vectors existed, or whose task has not run yet) come after the
ranked ones, newest first, without a score; `manage.py embed_medallions` embeds the missing ones."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from checkpoints import medallion_schema as schema
from checkpoints.llm.embeddings import get_embedder
from checkpoints.models import Medallion, Workspace
from checkpoints.models.medallion import MedallionQuerySet
from checkpoints.services.embedding import EMBED_MEDALLION_TASK, embeds_in_background, send_after_commit
from checkpoints.services.store_vectors import dimension_of, pack, query_vector_for, unpack

Ranked = list[tuple[Medallion, float | None]]


def medallion_text(medallion: Medallion) -> str:
    """What is embedded: the summary, subsystems, decisions and open questions, and the scope's names."""
    parts: list[str] = [medallion.high_level]
    parts += [f"{s.get('name', '')}: {s.get('notes', '')}" for s in _objects(medallion.subsystems)]
    parts += [f"{d.get('statement', '')} {d.get('rationale', '')}" for d in _objects(medallion.decisions)]
    parts += [str(q.get("question", "")) for q in _objects(medallion.open_questions)]
    parts += [*medallion.graph_nodes, *medallion.tags]
    return "\n".join(part.strip() for part in parts if part and part.strip())


def _objects(values: Iterable[object]) -> list[dict[str, object]]:
    return [value for value in values or [] if isinstance(value, dict)]


def _vectors(medallions: Sequence[Medallion]) -> list[bytes | None]:
    embedder = get_embedder()
    if embedder is None or not medallions:
        return [None] * len(medallions)
    return [pack([vector]) for vector in embedder.embed([medallion_text(m) for m in medallions])]


def medallion_vector_write(medallion: Medallion) -> None:
    """Call inside the transaction of every medallion write, with the row as written: its vector follows
    the new version (inline, or by a task after commit; until then it has none, rather than the old one)."""
    later = embeds_in_background()
    blob = None if later else _vectors([medallion])[0]
    Medallion.objects.filter(pk=medallion.pk, version=medallion.version).update(vector=blob)
    if later:
        send_after_commit(EMBED_MEDALLION_TASK, medallion.pk, medallion.version)


def medallion_embed(*, medallion_pk: int, version: int) -> bool:
    """The task's work: embed this version of the medallion. If a newer version was written meanwhile, the
    conditional UPDATE changes nothing (that version has its own task): late or repeated tasks do no harm."""
    medallion = Medallion.objects.filter(pk=medallion_pk, version=version).first()
    if medallion is None:
        return False
    (blob,) = _vectors([medallion])  # the slow part: no transaction, no lock
    return bool(Medallion.objects.filter(pk=medallion_pk, version=version).update(vector=blob))


def medallions_embed_missing(*, batch_size: int = 64) -> int:
    """Embed every medallion without a vector (all workspaces), a batch per provider call; returns how
    many were embedded. Nothing to do without an embedder."""
    if get_embedder() is None:
        return 0
    done, after = 0, 0
    while True:
        batch = list(Medallion.objects.filter(vector__isnull=True, pk__gt=after).order_by("pk")[:batch_size])
        if not batch:
            return done
        for medallion, blob in zip(batch, _vectors(batch), strict=True):
            done += Medallion.objects.filter(pk=medallion.pk, version=medallion.version).update(vector=blob)
        after = batch[-1].pk


def medallions_search(
    *,
    workspace: Workspace,
    scope: schema.MedallionScope,
    query: str,
    statuses: tuple[str, ...] = (Medallion.Status.ACTIVE,),
    limit: int = 10,
    offset: int = 0,
) -> Ranked:
    """The medallions of `scope` (as `medallions_for_scope`; an empty scope selects all) with these statuses,
    ranked by meaning against `query`: the best score first (ties: the newer), then the unembedded ones
    newest first with no score. Returns up to `limit` of them from `offset`."""
    selected: MedallionQuerySet = (
        Medallion.objects.for_workspace(workspace)
        .filter(status__in=statuses)
        .matching_scope(scope.graph_nodes, scope.tags)
    )
    vector = query_vector_for(query, None)
    pks, scores = _scores(selected, vector) if vector is not None else (np.zeros(0, np.int64), np.zeros(0))
    order = np.lexsort((-pks, -scores))[offset : offset + limit]
    rows = selected.for_api().in_bulk([int(pks[i]) for i in order])
    found: Ranked = [(rows[int(pks[i])], float(scores[i])) for i in order if int(pks[i]) in rows]
    if len(found) < limit:
        skip = max(0, offset - len(pks))
        rest = selected.exclude(pk__in=[int(pk) for pk in pks]) if len(pks) else selected
        found += [(m, None) for m in rest.for_api().newest_first()[skip : skip + limit - len(found)]]
    return found


def _scores(selected: MedallionQuerySet, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cosine similarity of each embedded medallion of `selected` whose vector has the query's dimension
    (one embedded by another model is left unranked)."""
    dimension = len(query)
    stored = selected.filter(vector__isnull=False).values_list("pk", "vector").iterator()
    blobs = [(pk, bytes(blob)) for pk, blob in stored if blob is not None]
    rows = [(pk, blob) for pk, blob in blobs if dimension_of(blob) == dimension]
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    matrix = np.vstack([unpack(blob)[0] for _pk, blob in rows])
    norms = np.linalg.norm(matrix, axis=1)
    scores = (matrix @ query) / np.where(norms == 0, 1, norms)
    return np.fromiter((pk for pk, _blob in rows), dtype=np.int64, count=len(rows)), scores.astype(np.float32)
