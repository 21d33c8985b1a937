"""medallion's documented API on a live Cairn: `MedallionStore` with the seed's methods, `checkpoint_session`
with a user's own LLM (run here; the server validates and stores what it writes), the seed's models validated
at construction, their pydantic-style methods, and the seed's exceptions."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

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
            with pytest.raises(StoreError, match="exactly this scope"):
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
