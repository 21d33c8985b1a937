"""Search by meaning on the server (docs/store.md): the offline default model, the fields embedded, the
in-memory snapshot kept current by writes, and the OpenAI-compatible provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import httpx
import pytest
import time_machine
from django.utils import timezone

from checkpoints.exceptions import Unavailable
from checkpoints.llm.embeddings import OpenAICompatibleEmbedder, get_embedder
from checkpoints.services.store_vectors import texts_at
from tests.conftest import ApiClient
from tests.store.test_store_api import keys, put, search

pytestmark = pytest.mark.django_db


def test_the_default_model_loads_and_embeds_with_no_network() -> None:
    script = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('no network')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from checkpoints.llm.embeddings import WordLlamaEmbedder\n"
        "vectors = WordLlamaEmbedder().embed(['a dog', 'a puppy'])\n"
        "print(len(vectors), len(vectors[0]))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOME": "/nonexistent"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "256"]


def test_the_server_embeds_and_ranks_the_closer_text_first(api: ApiClient) -> None:
    put(api, ["kb"], "pets", {"text": "My dog loves to play fetch in the park with other puppies."})
    put(api, ["kb"], "tax", {"text": "The quarterly tax report is due to the accountant on Friday."})
    put(api, ["kb"], "food", {"text": "A recipe for spaghetti with tomato sauce and fresh basil."})
    put(api, ["kb"], "off", {"text": "dog puppy park"}, index=False)
    found = search(api, namespace_prefix=["kb"], query="puppies and dogs playing", limit=10)
    assert keys(found)[0] == "pets"
    assert keys(found)[-1] == "off" and "score" not in found[-1]
    assert found[0]["score"] > found[1]["score"] > 0 or found[0]["score"] > found[1]["score"]
    accounting = search(api, namespace_prefix=["kb"], query="income taxes and accounting", limit=1)
    assert keys(accounting) == ["tax"]
    cooking = search(api, namespace_prefix=["kb"], query="pasta dinner", limit=2, offset=0)
    assert keys(cooking)[0] == "food"


def test_only_the_index_fields_are_embedded(api: ApiClient) -> None:
    put(api, ["f"], "a", {"title": "spaghetti carbonara", "body": "tax accountant invoice"}, index=["title"])
    put(api, ["f"], "b", {"title": "tax accountant invoice", "body": "spaghetti carbonara"}, index=["title"])
    assert keys(search(api, namespace_prefix=["f"], query="italian pasta", limit=1)) == ["a"]
    assert keys(search(api, namespace_prefix=["f"], query="bookkeeping and taxes", limit=1)) == ["b"]


def test_searches_see_every_write_at_once(api: ApiClient) -> None:
    every_write_is_seen(api)


@pytest.mark.django_db(transaction=True)
def test_searches_see_every_committed_write_through_the_cached_snapshot(api: ApiClient) -> None:
    every_write_is_seen(api)
    # A batch's search sees the batch's own put, before it commits.
    ops = [
        {"op": "put", "namespace": ["s", "c"], "key": "new", "value": {"text": "sailing boats on a lake"}},
        {"op": "search", "namespace_prefix": ["s"], "query": "sailing boats on a lake", "limit": 1},
    ]
    response = api.post("/api/v1/store/batch/", {"ops": ops}, format="json")
    assert [item["key"] for item in response.json()["results"][1]] == ["new"]
    assert keys(search(api, namespace_prefix=["s"], query="sailing boats on a lake", limit=1)) == ["new"]


def every_write_is_seen(api: ApiClient) -> None:
    put(api, ["s", "a"], "one", {"text": "mountain hiking trip"})
    put(api, ["s", "b"], "two", {"text": "stock market investing"})
    assert keys(search(api, namespace_prefix=["s"], query="hiking in the mountains", limit=1)) == ["one"]
    put(api, ["s", "a"], "three", {"text": "hiking in the mountains"})
    assert keys(search(api, namespace_prefix=["s"], query="hiking in the mountains", limit=1)) == ["three"]
    put(api, ["s", "a"], "three", {"text": "bond yields and stock prices"})  # re-embedded on update
    assert keys(search(api, namespace_prefix=["s"], query="hiking in the mountains", limit=1)) == ["one"]
    api.delete("/api/v1/store/items", {"namespace": ["s", "a"], "key": "one"}, format="json")
    assert "one" not in keys(search(api, namespace_prefix=["s"], query="hiking in the mountains"))
    # The prefix, the filter and expiry bound the ranking.
    assert keys(search(api, namespace_prefix=["s", "b"], query="bond yields")) == ["two"]
    filtered = search(
        api, namespace_prefix=["s"], query="bond yields", filter={"text": "stock market investing"}
    )
    assert keys(filtered) == ["two"]
    put(api, ["s", "a"], "brief", {"text": "bond yields"}, ttl=1)
    with time_machine.travel(timezone.now() + timedelta(minutes=2), tick=False):
        assert "brief" not in keys(search(api, namespace_prefix=["s"], query="bond yields"))


def test_another_workspace_is_never_ranked(api: ApiClient, other_api: ApiClient) -> None:
    put(api, ["m"], "mine", {"text": "secret mountain cabin"})
    put(other_api, ["m"], "theirs", {"text": "city apartment"})
    assert keys(search(other_api, query="secret mountain cabin", limit=10)) == ["theirs"]


@pytest.mark.parametrize(
    ("path", "texts"),
    [
        ("$", ['{"a": {"b": "x"}, "list": [{"c": "1"}, {"c": 2}], "n": 3}']),
        ("a.b", ["x"]),
        ("list[*].c", ["1", "2"]),
        ("list[0].c", ["1"]),
        ("list[-1].c", ["2"]),
        ("list[5].c", []),
        ("n", ["3"]),
        ("a", ['{"b": "x"}']),
        ("*", ['{"b": "x"}', '[{"c": "1"}, {"c": 2}]', "3"]),
        ("missing.path", []),
    ],
)
def test_field_paths_select_texts_as_langgraph_does(path: str, texts: list[str]) -> None:
    value = {"a": {"b": "x"}, "list": [{"c": "1"}, {"c": 2}], "n": 3}
    assert texts_at(value, path) == texts


def test_the_openai_compatible_provider_posts_to_embeddings() -> None:
    seen: list[Any] = []

    def endpoint(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("authorization"), json.loads(request.content)))
        data = [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]
        return httpx.Response(200, json={"data": data})

    embedder = OpenAICompatibleEmbedder(
        base_url="http://embeddings.test/v1/", api_key="k", model="m", transport=httpx.MockTransport(endpoint)
    )
    assert embedder.embed(["first", "second"]) == [[1.0, 0.0], [0.0, 1.0]]
    assert seen == [
        ("http://embeddings.test/v1/embeddings", "Bearer k", {"model": "m", "input": ["first", "second"]})
    ]
    failing = OpenAICompatibleEmbedder(
        base_url="http://embeddings.test/v1", api_key="", model="m",
        transport=httpx.MockTransport(lambda request: httpx.Response(500)),
    )  # fmt: skip
    with pytest.raises(Unavailable):
        failing.embed(["x"])


def test_the_provider_is_chosen_by_settings(settings: Any, api: ApiClient) -> None:
    assert get_embedder().name == "wordllama"  # type: ignore[union-attr]
    settings.CAIRN_EMBEDDINGS = {**settings.CAIRN_EMBEDDINGS, "PROVIDER": "none"}
    assert get_embedder() is None
    put(api, ["n"], "k", {"text": "not embedded"})
    found = search(api, namespace_prefix=["n"], query="not embedded")
    assert keys(found) == ["k"] and "score" not in found[0]


MULTI = {"a": {"b": "x", "c": {"d": "y"}}, "list": [{"c": "1", "e": "z"}, {"c": "w"}], "n": "m", "t": "tt"}


@pytest.mark.parametrize(
    ("path", "texts"),
    [
        ("{n,t}", ["m", "tt"]),
        ("{n, t}", ["m", "tt"]),
        ("a.{b,c.d}", ["x", "y"]),
        ("a.{b,missing}", ["x"]),
        ("list[*].{c,e}", ["1", "z", "w"]),
        ("list[0].{c,e}", ["1", "z"]),
        ("{a}", ['{"b": "x", "c": {"d": "y"}}']),
        ("{n,t}.x", ["m", "tt"]),  # as in LangGraph: the path ends at the braces
        ("n.{t}", []),
        ("{,}", []),
    ],
)
def test_multi_field_paths_select_what_langgraph_selects(path: str, texts: list[str]) -> None:
    from langgraph.store.base.embed import get_text_at_path

    assert texts_at(MULTI, path) == texts
    assert get_text_at_path(MULTI, path) == texts  # the same selection as LangGraph's own


def test_a_put_embeds_only_the_fields_in_braces(api: ApiClient) -> None:
    put(api, ["n"], "k", {"memo": {"title": "dog", "body": "tax"}, "other": "rocket"}, index=["memo.{title}"])
    put(api, ["n"], "j", {"memo": {"title": "tax", "body": "dog"}, "other": "dog"}, index=["memo.{title}"])
    found = search(api, namespace_prefix=["n"], query="dog")
    assert keys(found) == ["k", "j"] and found[0]["score"] > 0.99 > found[1]["score"]
