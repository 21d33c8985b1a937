"""`load_medallions_for_scope(store, scope, limit, query=...)` against a live server: the scope's medallions
ranked by meaning (`POST medallions/search/`), sync and async; without a query, newest first as before."""

from __future__ import annotations

import asyncio

import pytest

from checkpoints.sdk import AsyncClient, Client
from checkpoints.sdk.medallion import (
    Evidence,
    MedallionScope,
    aload_medallions_for_scope,
    checkpoint_session,
    load_medallions_for_scope,
)
from tests.medallions.fixtures import (
    UNRELATED_SUBJECTS,
    eager,  # noqa: F401  (fixture: jobs run when published)
)

pytestmark = pytest.mark.usefixtures("eager")
REPO = MedallionScope(graph_nodes=["repo:muse"])


def written(client: Client) -> dict[str, str]:
    """Three medallions of one repo, about unrelated things; their ids by subject."""
    return {
        subject: checkpoint_session(
            client,
            None,
            MedallionScope(graph_nodes=["repo:muse"], tags=[subject]),
            Evidence(session_summary=text),
        ).meta.medallion_id
        for subject, text in UNRELATED_SUBJECTS.items()
    }


def test_a_query_ranks_the_scope_by_meaning(client: Client) -> None:
    ids = written(client)
    found = load_medallions_for_scope(client, REPO, limit=3, query="a puppy fetching a ball")
    assert len(found) == 3 and found[0].meta.medallion_id == ids["dogs"]
    [first] = load_medallions_for_scope(client, REPO, 1, "launching satellites")
    assert first.meta.medallion_id == ids["rockets"]
    newest = load_medallions_for_scope(client, REPO, limit=3)
    assert [m.meta.medallion_id for m in newest] == [ids["rockets"], ids["tax"], ids["dogs"]]
    with pytest.raises(ValueError, match="query"):
        load_medallions_for_scope(client, REPO, query=" ")


def test_the_async_twin_takes_a_query_too(client: Client, cairn_url: str, cairn_key: str) -> None:
    ids = written(client)

    async def scenario() -> list[str]:
        async with AsyncClient(cairn_url, cairn_key) as cairn:
            found = await aload_medallions_for_scope(cairn, REPO, limit=2, query="my tax accountant")
            return [m.meta.medallion_id for m in found]

    assert asyncio.run(scenario())[0] == ids["tax"]
