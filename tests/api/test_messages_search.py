"""Message search finds words in any script and never JSON syntax; the same results on PostgreSQL and SQLite
(this module runs on whichever database the suite uses; CI runs both)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

URL = "/api/v1/threads/t1/messages/"

MESSAGES: list[dict[str, Any]] = [
    {"message_id": "fr", "role": "user", "content": "Quelle est la décision finale ?"},
    {
        "message_id": "ja",
        "role": "assistant",
        "content": "",
        "content_blocks": [
            {"type": "text", "text": "最終的な決定は明日です。"},
            {"type": "image", "url": "https://example.com/決定.png"},
        ],
    },
    {"message_id": "ar", "role": "user", "content": "هذا قرار نهائي"},
    {"message_id": "de", "role": "assistant", "content": "Die Straße ist gesperrt."},
    {
        "message_id": "tool",
        "role": "assistant",
        "content": "Looking it up",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"arguments": '{"city": "Paris"}'}}],
        "metadata": {"topic": "weather", "role": "planner"},
    },
    {"message_id": "pct", "role": "tool", "content": "Coverage is 100% for a_b.", "tool_call_id": "c1"},
    {"message_id": "num", "role": "tool", "content": "Coverage is 1000 for axb.", "tool_call_id": "c1"},
    {"message_id": "phrase", "role": "user", "content": "a decision that was final"},
]


@pytest.fixture
def conversation(api: ApiClient) -> ApiClient:
    response = api.post(URL, {"messages": MESSAGES})
    assert response.status_code == 201, response.json()
    return api


def found(api: ApiClient, search: str, url: str = URL, **params: str) -> list[str]:
    response = api.get(url, {"search": search, **params})
    assert response.status_code == 200, response.json()
    return sorted(m["message_id"] for m in response.json()["results"])


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ("décision", ["fr"]),
        ("決定", ["ja"]),  # two characters: below the trigram length, still found
        ("最終的な決定", ["ja"]),
        ("قرار", ["ar"]),
        ("DÉCISION", ["fr"]),  # case folded in every script
        ("STRASSE", ["de"]),  # full case folding: ß = ss
        ("decis", ["phrase"]),  # a substring; accents are significant
        ("décision finale", ["fr"]),  # every term must appear
        ("decision final", ["phrase"]),
        ('"decision that"', ["phrase"]),  # a quoted phrase is one term
        ('"decision final"', []),
        ("100%", ["pct"]),  # LIKE wildcards are literal
        ("a_b", ["pct"]),
        ("coverage", ["num", "pct"]),
    ],
)
def test_it_finds_words_in_any_script(conversation: ApiClient, search: str, expected: list[str]) -> None:
    assert found(conversation, search) == expected
    assert found(conversation, search, url="/api/v1/messages/") == expected


@pytest.mark.parametrize(
    "search",
    [
        "role",
        '"role"',
        '{"role":',
        "user",
        "assistant",
        "content",
        "type",
        "text",
        "image",
        "Paris",
        "weather",
        "planner",
        "tool_calls",
        "c1",
        "example.com",
    ],
)
def test_it_never_matches_json_keys_roles_ids_tool_calls_or_metadata(
    conversation: ApiClient, search: str
) -> None:
    assert found(conversation, search) == []


@pytest.mark.parametrize(
    "search", ['a"b', "foo*", "NEAR(a b)", "x OR y", "-z", "^start", "(", "'", "\\", "%", "_", "*", ":"]
)
def test_it_treats_full_text_syntax_as_plain_text(conversation: ApiClient, search: str) -> None:
    # FTS5 and LIKE metacharacters are searched for literally; none of these texts contain them except
    # "%" and "_" (in "100% for a_b") and ":" nowhere.
    expected = ["pct"] if search in ("%", "_") else []
    assert found(conversation, search) == expected


def test_it_ignores_a_blank_search_and_refuses_an_overlong_one(conversation: ApiClient) -> None:
    assert len(found(conversation, "   ")) == len(MESSAGES)
    response = conversation.get(URL, {"search": "x" * 513})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    too_many = conversation.get(URL, {"search": " ".join(f"t{n}" for n in range(17))})
    assert too_many.status_code == 400


def test_it_combines_search_with_the_other_filters(conversation: ApiClient) -> None:
    assert found(conversation, "coverage", role="tool", after_seq="6") == ["num"]
    assert found(conversation, "décision", url="/api/v1/messages/", role="assistant") == []
    assert found(conversation, "décision", url="/api/v1/messages/", thread_id="t1") == ["fr"]


def test_it_stops_finding_a_deleted_message(conversation: ApiClient) -> None:
    assert conversation.delete(f"{URL}fr/").status_code == 204
    assert found(conversation, "décision") == []
    assert found(conversation, "décision", url="/api/v1/messages/") == []


def test_it_searches_only_the_requesting_workspace(conversation: ApiClient, other_api: ApiClient) -> None:
    assert found(other_api, "décision", url="/api/v1/messages/") == []
    other_api.post(URL, {"messages": [{"message_id": "theirs", "role": "user", "content": "ma décision"}]})
    assert found(other_api, "décision", url="/api/v1/messages/") == ["theirs"]
    assert found(conversation, "décision", url="/api/v1/messages/") == ["fr"]
