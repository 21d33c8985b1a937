"""`CairnStore` answers as LangGraph's own `InMemoryStore` does, on the same random operations: gets, puts
(updates included), searches with filters, namespace listings with prefixes, suffixes, wildcards and depth."""

from __future__ import annotations

import random
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from checkpoints.sdk.langgraph import CairnStore

pytestmark = pytest.mark.django_db(transaction=True)

LABELS = ["users", "alice", "bob", "memories", "notes", "ünï", "x"]


def random_namespace(rng: random.Random) -> tuple[str, ...]:
    return tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 4)))


def random_value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {"n": rng.randint(-5, 5), "s": rng.choice(["a", "b", "c", "ä"])}
    if rng.random() < 0.5:
        value["tag"] = rng.choice(["red", "blue"])
    if rng.random() < 0.3:
        value["meta"] = {"level": rng.randint(0, 2), "kind": rng.choice(["k1", "k2"])}
    return value


def random_filter(rng: random.Random) -> dict[str, Any]:
    choices: list[dict[str, Any]] = [
        {"n": rng.randint(-5, 5)},
        {"n": {rng.choice(["$gt", "$gte", "$lt", "$lte"]): rng.randint(-5, 5)}},
        {"n": {"$gt": rng.randint(-5, 0), "$lte": rng.randint(0, 5)}},
        {"n": {"$ne": rng.randint(-5, 5)}},
        {"s": rng.choice(["a", "b", "ä"])},
        {"s": {"$eq": rng.choice(["a", "c"])}},
        {"tag": {"$ne": "red"}},
        {"tag": "blue", "s": rng.choice(["a", "b"])},
        {"meta": {"kind": rng.choice(["k1", "k2"])}},
    ]
    return rng.choice(choices)


def random_pattern(rng: random.Random) -> tuple[str, ...]:
    return tuple(rng.choice([*LABELS, "*"]) for _ in range(rng.randint(1, 2)))


def test_the_same_random_operations_give_the_same_answers(cairn_url: str, cairn_key: str) -> None:
    rng = random.Random(20261128)
    reference = InMemoryStore()
    with CairnStore(cairn_url, cairn_key) as store:
        written: list[tuple[tuple[str, ...], str]] = []
        for step in range(60):
            namespace, key = random_namespace(rng), rng.choice(["k1", "k2", "k3"])
            if written and rng.random() < 0.3:
                namespace, key = rng.choice(written)  # an update
            value = random_value(rng)
            reference.put(namespace, key, value)
            store.put(namespace, key, value)
            written.append((namespace, key))
            if step % 3 == 0:
                probe_ns, probe_key = rng.choice(written)
                expected, got = reference.get(probe_ns, probe_key), store.get(probe_ns, probe_key)
                assert expected is not None and got is not None
                assert (got.namespace, got.key, got.value) == (
                    expected.namespace,
                    expected.key,
                    expected.value,
                )
        for _ in range(40):
            prefix = random_namespace(rng)[: rng.randint(0, 2)]
            filter_ = random_filter(rng)
            expected_keys = {
                (i.namespace, i.key) for i in reference.search(prefix, filter=filter_, limit=500)
            }
            got_keys = {(i.namespace, i.key) for i in store.search(prefix, filter=filter_, limit=500)}
            assert got_keys == expected_keys, (prefix, filter_)
        for _ in range(40):
            options: dict[str, Any] = {}
            if rng.random() < 0.6:
                options["prefix"] = random_pattern(rng)
            if rng.random() < 0.4:
                options["suffix"] = random_pattern(rng)
            if rng.random() < 0.5:
                options["max_depth"] = rng.randint(1, 3)
            options["limit"], options["offset"] = rng.randint(1, 50), rng.randint(0, 3)
            assert store.list_namespaces(**options) == reference.list_namespaces(**options), options
