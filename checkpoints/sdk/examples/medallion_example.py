"""medallion's session helpers on Cairn: load what earlier sessions learned, then checkpoint this one.

python -m checkpoints.sdk.examples.medallion_example
"""

from __future__ import annotations

from checkpoints.ids import new_id
from checkpoints.sdk import Client
from checkpoints.sdk.medallion import Evidence, MedallionScope, checkpoint_session, load_medallions_for_scope


def main() -> None:
    project = f"repo:muse-{new_id()[-8:]}"
    scope = MedallionScope(graph_nodes=[project, "module:cli"], tags=["project_state", "refactor"])
    with Client.from_env() as cairn:
        before = load_medallions_for_scope(cairn, MedallionScope(graph_nodes=[project]), limit=5)
        print(f"medallions before: {len(before)}")
        created = checkpoint_session(
            cairn,
            None,  # no LLM of our own: the server's provider writes the medallion
            scope,
            Evidence(
                session_summary="Implemented CLI routing. We decided to use argparse subcommands.",
                transcripts=["User requested help command", "System showed help menu"],
                artefacts={"commands": ["help", "start", "stop"]},
            ),
        )
        print(f"created {created.meta.medallion_id} v{created.meta.version}: {created.summary.high_level}")
        updated = checkpoint_session(
            cairn, None, scope, Evidence(session_summary="We decided to add error handling.")
        )
        print(f"updated the same medallion: v{updated.meta.version}, {len(updated.decisions)} decisions")
        for medallion in load_medallions_for_scope(
            cairn, MedallionScope(graph_nodes=[project], tags=["refactor"])
        ):
            print(f"- {medallion.meta.medallion_id}: {medallion.summary.high_level}")


if __name__ == "__main__":
    main()
