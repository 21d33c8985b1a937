"""The lists read by a static statement answer a page the same whether the statement reads it (no filter
named) or the FilterSet's queryset does (a filter that keeps every row): the same results, byte for byte,
and links to the same pages, walked forwards to the end and back again. The timeline, the workspace
timeline and LangGraph's list, with each of their own parameters, and a thread's messages."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from checkpoints.models import Checkpoint
from tests.conftest import ApiClient
from tests.factories import make_checkpoint, make_pending_write

pytestmark = pytest.mark.django_db

LARGE = {"messages": [{"role": "user", "content": f"{n} " + "word " * 60} for n in range(40)]}


@pytest.fixture
def history(api: ApiClient, other_api: ApiClient) -> None:
    made = []
    for n in range(5):
        framework = Checkpoint.Framework.LANGGRAPH
        made.append(make_checkpoint(api.workspace, "t1", checkpoint_id=f"1f0-{n}", framework=framework))
        made.append(make_checkpoint(api.workspace, "t1", namespace="sub", checkpoint_id=f"1f0-{n}"))
        made.append(make_checkpoint(api.workspace, "t2", checkpoint_id=f"2-{n}", state=LARGE))
        make_checkpoint(other_api.workspace, "t1", checkpoint_id=f"1f0-{n}", framework=framework)
    for checkpoint in made[:6]:
        make_pending_write(checkpoint, {"n": checkpoint.pk})
    past = timezone.now() - timedelta(hours=1)
    Checkpoint.objects.filter(pk=made[3].pk).update(expires_at=past)
    Checkpoint.objects.filter(pk=made[6].pk).update(expires_at=past, pinned=True)
    Checkpoint.objects.filter(pk=made[9].pk).update(expired_at=past)
    for client, thread_id, count in ((api, "t1", 7), (api, "t2", 2), (other_api, "t1", 3)):
        messages = [{"role": "user", "content": f"{n}", "metadata": {"n": n}} for n in range(count)]
        appended = client.post(f"/api/v1/threads/{thread_id}/messages/", {"messages": messages})
        assert appended.status_code == 201, appended.content


LINKS = ("next", "previous")
KEEPS_EVERY_ROW = "created_after=2000-01-01T00:00:00Z"
LISTS = [
    ("/api/v1/threads/t1/checkpoints/?limit=2", KEEPS_EVERY_ROW),
    ("/api/v1/threads/t1/checkpoints/?limit=3&namespace=sub&include_state=true", KEEPS_EVERY_ROW),
    ("/api/v1/threads/t1/checkpoints/?limit=2&include_tombstones=true&namespace=", KEEPS_EVERY_ROW),
    ("/api/v1/threads/t1/checkpoints/?limit=2&before=1f0-4&namespace=", KEEPS_EVERY_ROW),
    ("/api/v1/threads/t2/checkpoints/?limit=2&include_state=true", KEEPS_EVERY_ROW),
    ("/api/v1/checkpoints/?limit=4", KEEPS_EVERY_ROW),
    ("/api/v1/checkpoints/?limit=3&include_state=true&include_tombstones=true", KEEPS_EVERY_ROW),
    ("/api/v1/langgraph/checkpoints/?thread_id=t1&namespace=&limit=2", "metadata=%7B%7D"),
    ("/api/v1/langgraph/checkpoints/?thread_id=t1&namespace=&checkpoint_id=1f0-2", "metadata=%7B%7D"),
    ("/api/v1/langgraph/checkpoints/?thread_id=t1&namespace=&before=1f0-3&limit=1", "metadata=%7B%7D"),
    ("/api/v1/langgraph/checkpoints/?thread_id=nowhere&limit=1", "metadata=%7B%7D"),
    ("/api/v1/langgraph/checkpoints/?limit=2", "metadata=%7B%7D"),
    ("/api/v1/threads/t1/messages/?limit=2", "after_seq=0"),
    ("/api/v1/threads/t1/messages/?limit=3", "role=user"),
    ("/api/v1/threads/t2/messages/?limit=50", "after_seq=0"),
]


def _walk(api: ApiClient, url: str) -> list[dict[str, Any]]:
    """Every page from `url` to the last by `next`, then back to the first by `previous`: each page's
    results and its links' cursors (the links' other parameters are the request's own)."""

    def page(url: str) -> dict[str, Any]:
        response = api.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        links = {name: body[name] and parse_qs(urlsplit(body[name]).query)["cursor"] for name in LINKS}
        return {"results": body["results"], "cursors": links, "links": [body[name] for name in LINKS]}

    pages = [page(url)]
    for direction in LINKS:
        while pages[-1]["cursors"][direction]:
            pages.append(page(pages[-1]["links"][LINKS.index(direction)]))
            assert len(pages) < 50
    return [{"results": p["results"], "cursors": p["cursors"]} for p in pages]


@pytest.mark.parametrize(("url", "filter_keeping_every_row"), LISTS, ids=[url for url, _ in LISTS])
def test_a_page_is_the_same_with_and_without_the_filterset(
    api: ApiClient, history: None, url: str, filter_keeping_every_row: str
) -> None:
    static = _walk(api, url)
    filtered = _walk(api, f"{url}&{filter_keeping_every_row}")
    assert static == filtered
    assert any(page["results"] for page in static) or "nowhere" in url
