"""`manage.py bench`: Cairn measured against raw PostgreSQL, a framework-less floor and LangGraph's own
PostgreSQL saver.

The command (`checkpoints/management/commands/bench.py`) only parses options; everything else lives here:

- `server`   a throwaway benchmark database and a production-like gunicorn serving it;
- `stats`    latency samples, percentiles and the concurrent-client loop;
- `payloads` deterministic JSON states of a given size;
- `saves`    checkpoint save/restore through the HTTP API against raw psycopg INSERT/SELECT + SHA-256 and
             against the floor;
- `floor`    the floor: a WSGI app with no framework doing a save's and a restore's essential work, served
             by the same gunicorn command as Cairn;
- `profiling` one save and one restore in-process under cProfile, bucketed into auth, validation, SQL,
             hashing, rendering and the rest;
- `graphs`   the SDK's AsyncCairnSaver against AsyncPostgresSaver (a 50-step graph, and storage of a
             200-turn conversation);
- `scale`    COPY bulk loads and the read paths (head, timeline, message search, medallion scope) at
             several table sizes;
- `sweep`    save latency while a retention sweep tombstones expired checkpoints;
- `report`   the printed table and the JSON file;
- `runner`   the order of it all.
"""
