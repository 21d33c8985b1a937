"""medallion's documented API on a live Cairn: `MedallionStore` with the seed's methods, `checkpoint_session`
with a user's own LLM (run here; the server validates and stores what it writes), the seed's models validated
at construction, their pydantic-style methods, and the seed's exceptions."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from checkpoints.sdk import Client
from checkpoints.sdk.medallion import (
    Evidence,
    LLMError,
    Medallion,
    MedallionAffordances,
    MedallionDecision,
    MedallionMeta,
    MedallionOpenQuestion,
    MedallionScope,
    MedallionStore,
    MedallionSummary,
    SchemaValidationError,
    SQLiteMedallionStore,
    StoreError,
    checkpoint_session,
    load_medallions_for_scope,
)
from tests.medallions.fixtures import eager  # noqa: F401  (fixture: jobs run when published)

SCOPE = MedallionScope(graph_nodes=["repo:muse", "module:cli"], tags=["project_state"])


class NotesLLM:
    """A user's LLM in the seed's shape: generate writes one decision, update appends one per session."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def generate(self, scope: MedallionScope, evidence: Evidence) -> Medallion:
        self.calls.append("generate")
        now = datetime.now()  # noqa: DTZ005  (naive, as the seed's LLMs write it)
        return Medallion(
            meta=MedallionMeta(medallion_id="med-local", model="notes-llm", created_at=now, updated_at=now),
            scope=scope,
            summary=MedallionSummary(high_level=evidence.session_summary[:300]),
            decisions=[
                MedallionDecision(id="D-1", statement=evidence.session_summary, rationale="", confidence=0.9)
            ],
            open_questions=[MedallionOpenQuestion(id="Q-1", question="Lazy plugins?", priority="high")],
            affordances=MedallionAffordances(),
        )

    async def update(self, existing: Medallion, new_evidence: Evidence) -> Medallion:
        self.calls.append("update")
        number = len(existing.decisions) + 1
        decision = MedallionDecision(
            id=f"D-{number}", statement=new_evidence.session_summary, rationale="", confidence=0.5
        )
        return existing.model_copy(update={"decisions": [*existing.decisions, decision]})


class BrokenLLM:
    async def generate(self, scope: MedallionScope, evidence: Evidence) -> Medallion:
        raise RuntimeError("model offline")

    async def update(self, existing: Medallion, new_evidence: Evidence) -> Medallion:
        raise RuntimeError("model offline")


def test_a_users_llm_writes_the_medallion_and_the_server_keeps_each_version(client: Client) -> None:
    llm = NotesLLM()
    created = checkpoint_session(client, llm, SCOPE, Evidence(session_summary="Use argparse."))
    assert created.meta.medallion_id != "med-local" and created.meta.version == 1  # the server's id
    assert created.meta.model == "notes-llm" and [d.id for d in created.decisions] == ["D-1"]
    updated = checkpoint_session(client, llm, SCOPE, Evidence(session_summary="Plugins load lazily."))
    assert updated.meta.medallion_id == created.meta.medallion_id and updated.meta.version == 2
    assert [d.statement for d in updated.decisions] == ["Use argparse.", "Plugins load lazily."]
    narrower = checkpoint_session(
        client, llm, MedallionScope(graph_nodes=["repo:muse"]), Evidence(session_summary="x")
    )
    assert narrower.meta.medallion_id != created.meta.medallion_id  # never the broader scope's medallion
    assert llm.calls == ["generate", "update", "generate"]
    assert [r.version for r in client.medallion_revisions(created.meta.medallion_id)] == [2, 1]

    with pytest.raises(LLMError, match="model offline"):
        checkpoint_session(client, BrokenLLM(), SCOPE, Evidence(session_summary="y"))
    assert client.medallion_get(created.meta.medallion_id).meta.version == 2  # nothing half-written


def test_the_store_has_the_seeds_methods(cairn_url: str, cairn_key: str) -> None:
    async def scenario() -> None:
        async with MedallionStore(cairn_url, cairn_key) as store:
            now = datetime.now()  # noqa: DTZ005  (naive, as the seed's LLMs write it)
            medallion = Medallion(
                meta=MedallionMeta(medallion_id="med-1", model="me", created_at=now, updated_at=now),
                scope=SCOPE,
                summary=MedallionSummary(high_level="Project state."),
                affordances=MedallionAffordances(recommended_entry_points=["cli.py"]),
            )
            await store.create(medallion)
            medallion_id = medallion.meta.medallion_id  # the server's id, written back
            assert medallion_id != "med-1" and medallion.meta.version == 1
            with pytest.raises(StoreError, match=f"Medallion with ID {medallion_id} already exists"):
                await store.create(medallion)
            medallion.summary = MedallionSummary(high_level="Project state, later.")
            await store.update(medallion)
            fetched = await store.get_by_id(medallion_id)
            assert fetched is not None and fetched.summary.high_level == "Project state, later."
            assert fetched.meta.version == 2 and fetched.affordances.recommended_entry_points == ["cli.py"]
            assert await store.get_by_id("00000000-0000-0000-0000-000000000000") is None
            latest = await store.get_latest_for_scope(MedallionScope(graph_nodes=["repo:muse"]), limit=1)
            assert [m.meta.medallion_id for m in latest] == [medallion_id]
            with pytest.raises(StoreError):
                await store.update(
                    Medallion.model_validate(
                        {
                            **medallion.to_dict(),
                            "meta": {**medallion.meta.to_dict(), "medallion_id": "0" * 32},
                        }
                    )
                )

    asyncio.run(scenario())
    with Client(cairn_url, cairn_key) as cairn:
        # the sync helpers take the store too, as the seed's do
        found = load_medallions_for_scope(MedallionStore(cairn_url, cairn_key), SCOPE)
        assert [m.to_dict() for m in found] == [
            m.to_dict() for m in cairn.medallions_list(graph_nodes=SCOPE.graph_nodes).results
        ]


def test_models_validate_at_construction_and_round_trip_as_json() -> None:
    now = datetime.now()  # noqa: DTZ005  (naive, as the seed's LLMs write it)
    with pytest.raises(SchemaValidationError, match="confidence"):
        MedallionDecision(id="D-1", statement="s", rationale="r", confidence=1.5)
    with pytest.raises(SchemaValidationError, match="priority"):
        MedallionOpenQuestion(id="Q-1", question="q", priority="urgent")
    with pytest.raises(ValueError, match="updated_at"):  # a ValueError, as pydantic's is
        MedallionMeta(medallion_id="m", model="x", created_at=now, updated_at=now - timedelta(seconds=1))
    medallion = Medallion(
        meta=MedallionMeta(medallion_id="m", model="x", created_at=now, updated_at=now),
        scope=MedallionScope(graph_nodes=["b", "a"]),
        summary=MedallionSummary(
            high_level="h",
            subsystems=[{"name": "store", "status": "stable", "notes": ""}],  # type: ignore[list-item]
        ),
        decisions=[MedallionDecision(id="D-1", statement="s", rationale="r", confidence=0.5)],
        affordances=MedallionAffordances(),
    )
    text = medallion.model_dump_json()
    assert text.startswith('{\n  "meta"')  # indented by 2, as the seed's
    again = Medallion.model_validate_json(text)
    assert again == medallion and type(again.summary.subsystems[0]).__name__ == "Subsystem"
    assert medallion.model_dump()["meta"]["created_at"] == medallion.meta.created_at
    assert medallion.model_dump(mode="json", exclude_none=True)["affordances"] == {
        "recommended_entry_points": [],
        "avoid_repeating": [],
    }
    with pytest.raises(SchemaValidationError, match=r"decisions\[1\]"):
        Medallion.model_validate({**medallion.to_dict(), "decisions": [medallion.decisions[0].to_dict()] * 2})


def test_the_sqlite_store_names_the_one_line_switch() -> None:
    with pytest.raises(StoreError, match=r"with `MedallionStore.from_env\(\)`"):
        SQLiteMedallionStore("medallions.db")


def _medallion(scope: MedallionScope, high_level: str) -> Medallion:
    now = datetime.now(UTC)
    return Medallion(
        meta=MedallionMeta(medallion_id="local", model="me", created_at=now, updated_at=now),
        scope=scope,
        summary=MedallionSummary(high_level=high_level),
        affordances=MedallionAffordances(),
    )


def test_a_second_medallion_for_a_scope_already_exists(cairn_url: str, cairn_key: str) -> None:
    """One active medallion per exact scope: a second create is the seed's "already exists" StoreError,
    naming the medallion to update; the scope is stored normalised (stripped, deduplicated, sorted)."""

    async def scenario() -> None:
        async with MedallionStore(cairn_url, cairn_key) as store:
            first = await store.create(
                _medallion(MedallionScope(graph_nodes=["repo:muse", "module:cli"], tags=["b", "a"]), "first")
            )
            assert (first.scope.graph_nodes, first.scope.tags) == (["module:cli", "repo:muse"], ["a", "b"])
            same_scope = MedallionScope(
                graph_nodes=[" module:cli", "repo:muse", "repo:muse"], tags=["a", "b"]
            )
            with pytest.raises(
                StoreError, match=rf"^Medallion with ID {first.meta.medallion_id} already exists"
            ):
                await store.create(_medallion(same_scope, "second"))
            # A scope that only overlaps is another scope: its own medallion.
            other = await store.create(_medallion(MedallionScope(graph_nodes=["repo:muse"], tags=["a"]), "x"))
            assert other.meta.medallion_id != first.meta.medallion_id

    asyncio.run(scenario())


@pytest.mark.usefixtures("eager")
def test_evidence_leaves_transcripts_and_artefacts_none_as_the_seeds_does(client: Client) -> None:
    evidence = Evidence(session_summary="Reviewed the CLI.")
    assert (evidence.transcripts, evidence.artefacts) == (None, None)
    assert evidence.model_dump() == {
        "session_summary": "Reviewed the CLI.",
        "transcripts": None,
        "artefacts": None,
    }
    given = Evidence(session_summary="s", transcripts=["a"], artefacts={"k": 1})
    assert (given.transcripts, given.artefacts) == (["a"], {"k": 1})
    seen: list[Evidence] = []

    class RecordingLLM(NotesLLM):
        async def generate(self, scope: MedallionScope, evidence: Evidence) -> Medallion:
            seen.append(evidence)
            return await super().generate(scope, evidence)

    checkpoint_session(client, RecordingLLM(), SCOPE, evidence)  # a user's LLM gets what the seed's gets
    assert (seen[0].transcripts, seen[0].artefacts) == (None, None)
    # The server's provider takes it too (no transcripts, no artefacts).
    served = checkpoint_session(client, None, MedallionScope(graph_nodes=["repo:other"]), evidence)
    assert served.meta.version == 1


def test_an_update_that_changes_only_meta_moves_updated_at(cairn_url: str, cairn_key: str) -> None:
    """The seed's update writes the medallion's meta as given: moving `updated_at` alone moves it. Cairn
    records a new version at the server's time (never before the previous one)."""

    async def scenario() -> None:
        async with MedallionStore(cairn_url, cairn_key) as store:
            medallion = await store.create(_medallion(MedallionScope(graph_nodes=["repo:meta"]), "same"))
            before = medallion.meta.updated_at
            medallion.meta.updated_at = before + timedelta(seconds=1)
            await store.update(medallion)
            fetched = await store.get_by_id(medallion.meta.medallion_id)
            assert fetched is not None and fetched.meta.version == 2
            assert fetched.meta.updated_at > before and fetched.summary.high_level == "same"
            # Unchanged, meta included: nothing to store, as the seed's rewrite of the same row.
            await store.update(fetched)
            again = await store.get_by_id(medallion.meta.medallion_id)
            assert again is not None and (again.meta.version, again.meta.updated_at) == (
                2,
                fetched.meta.updated_at,
            )

    asyncio.run(scenario())
