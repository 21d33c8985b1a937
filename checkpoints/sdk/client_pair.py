"""The blocking and the async client an integration (LangGraph saver and store, PyAgenity checkpointer) talks
through: given, or built for a base URL and key."""

from __future__ import annotations

from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.client import Client


def client_pair(
    base_url: str | None, api_key: str | None, client: Client | None, async_client: AsyncClient | None
) -> tuple[Client, AsyncClient]:
    """The clients given, else new ones for `base_url` and `api_key` (ValueError when those are missing)."""
    if (client is None or async_client is None) and (base_url is None or api_key is None):
        raise ValueError("pass base_url and api_key, or both client and async_client")
    return (
        client or Client(base_url or "", api_key or ""),
        async_client or AsyncClient(base_url or "", api_key or ""),
    )
