"""Storage and speed internals: the static statements of the hot path, the hot cursor, keyset seeks, the
packed-document parts, and the per-process memos and caches in front of the database.

The rules themselves (what a read may return, when a thread expires, what a save decides) live in the
models and `checkpoints.services`; the modules here only build statements from them and make them fast.
See docs/architecture.md, "The hot path" and "One definition per concept".
"""
