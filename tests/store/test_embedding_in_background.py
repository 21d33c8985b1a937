"""Embedding in the background (docs/store.md): with a remote embedder a put or a medallion write is stored
at once without vectors, found by exact filters at once and ranked once the task has run after commit;
with the local model it stays inline. The tasks run in-process (eager), as the repository tests task bodies;
the remote endpoint is a real HTTP server on the loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from checkpoints.models import Medallion, StoreItem
from checkpoints.services.embedding import embeds_in_background
from checkpoints.tasks import medallion_embed_task, store_item_embed_task
from tests.api.test_medallions import create
from tests.conftest import ApiClient
from tests.store.test_store_api import keys, put, search

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]
Capture = Callable[..., Any]


class Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible `/embeddings`: texts about dogs point one way, everything else another."""

    texts: list[str]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).texts.extend(body["input"])
        data = [
            {"index": i, "embedding": [1.0, 0.1, 0.0] if "dog" in text else [0.0, 0.1, 1.0]}
            for i, text in enumerate(body["input"])
        ]
        answer = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def remote(settings: Any) -> Iterator[type[Embeddings]]:
    """The `openai` provider, pointed at a local endpoint; `auto` puts its work in the background."""
    Embeddings.texts = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.CAIRN_EMBEDDINGS = {
        **settings.CAIRN_EMBEDDINGS,
        "PROVIDER": "openai",
        "BASE_URL": f"http://127.0.0.1:{server.server_port}/v1",
        "IN_BACKGROUND": "auto",
    }
    yield Embeddings
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("provider", "choice", "later"),
    [
        ("wordllama", "auto", False),
        ("openai", "auto", True),
        ("wordllama", "always", True),
        ("openai", "never", False),
        ("none", "always", False),
    ],
)
def test_the_setting_chooses_inline_or_background(
    settings: Any, provider: str, choice: str, later: bool
) -> None:
    settings.CAIRN_EMBEDDINGS = {**settings.CAIRN_EMBEDDINGS, "PROVIDER": provider, "IN_BACKGROUND": choice}
    assert embeds_in_background() is later


def test_a_wrong_setting_fails_loudly(settings: Any) -> None:
    settings.CAIRN_EMBEDDINGS = {**settings.CAIRN_EMBEDDINGS, "IN_BACKGROUND": "sometimes"}
    with pytest.raises(ImproperlyConfigured, match="IN_BACKGROUND"):
        embeds_in_background()


def test_the_local_model_embeds_inside_the_put(
    api: ApiClient, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks() as sent:
        put(api, ["n"], "k", {"text": "a dog"})
    assert StoreItem.objects.get(key="k").vectors is not None
    assert search(api, namespace_prefix=["n"], query="dog")[0]["score"] > 0.5
    assert len(sent) == 1  # only the snapshot token's refresh: no task


def test_a_remote_put_is_found_by_filters_at_once_and_by_meaning_once_embedded(
    api: ApiClient, remote: type[Embeddings], django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        put(api, ["n"], "cat", {"text": "a cat on the sofa", "kind": "pet"})
    with django_capture_on_commit_callbacks() as pending:
        put(api, ["n"], "dog", {"text": "a dog in the park", "kind": "pet"})
    assert remote.texts == ['{"kind": "pet", "text": "a cat on the sofa"}']  # the put itself sent nothing
    assert StoreItem.objects.get(key="dog").vectors is None
    assert keys(search(api, namespace_prefix=["n"], filter={"kind": "pet"})) == ["dog", "cat"]
    before = search(api, namespace_prefix=["n"], query="dog")
    assert [(i["key"], "score" in i) for i in before] == [("cat", True), ("dog", False)]  # unranked last
    for callback in pending:
        callback()
    after = search(api, namespace_prefix=["n"], query="dog")
    assert keys(after) == ["dog", "cat"] and after[0]["score"] > after[1]["score"]


def test_only_the_index_fields_are_embedded_in_the_background(
    api: ApiClient, remote: type[Embeddings], django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        put(api, ["n"], "k", {"title": "dog", "body": "long text"}, index=["title"])
    assert remote.texts == ["dog"]


def test_a_late_or_repeated_task_never_stores_stale_vectors(
    api: ApiClient, remote: type[Embeddings], django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks() as first:
        put(api, ["n"], "k", {"text": "a dog"})
    written_at = StoreItem.objects.get(key="k").updated_at.isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        put(api, ["n"], "k", {"text": "a cat"})
    newer = StoreItem.objects.get(key="k").vectors
    assert newer is not None
    for callback in first:
        callback()  # the first put's task, delivered late: the item has moved on
    assert StoreItem.objects.get(key="k").vectors == newer
    item = StoreItem.objects.get(key="k")
    assert store_item_embed_task(item.pk, written_at, None) is False
    assert store_item_embed_task(item.pk, item.updated_at.isoformat(), None) is True
    assert store_item_embed_task(item.pk, item.updated_at.isoformat(), None) is True  # twice: same vectors
    assert StoreItem.objects.get(key="k").vectors == newer


def test_a_remote_medallion_write_is_embedded_after_commit(
    api: ApiClient, remote: type[Embeddings], django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks() as pending:
        medallion_id = create(api, summary={"high_level": "Walking the dog.", "subsystems": []})["meta"][
            "medallion_id"
        ]
    medallion = Medallion.objects.get(medallion_id=medallion_id)
    assert medallion.vector is None and remote.texts == []
    found = api.post("/api/v1/medallions/search/", {"query": "dog", "graph_nodes": ["repo:muse"]}).json()
    assert [m["score"] for m in found["results"]] == [None]
    for callback in pending:
        callback()
    assert Medallion.objects.get(pk=medallion.pk).vector is not None
    assert any("Walking the dog." in text for text in remote.texts)
    found = api.post("/api/v1/medallions/search/", {"query": "dog", "graph_nodes": ["repo:muse"]}).json()
    assert found["results"][0]["score"] == pytest.approx(1.0, abs=1e-3)
    assert medallion_embed_task(medallion.pk, medallion.version + 1) is False  # no such version
