"""`MedallionStore` on Cairn: the seed's store methods, so code written against `SQLiteMedallionStore` runs
unchanged once the store is constructed. Async, as the seed's store is."""

from __future__ import annotations

import os
from typing import Any, NoReturn

from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.client_steps import arun
from checkpoints.sdk.closing import AsyncClosing
from checkpoints.sdk.errors import Conflict, NotFound, ValidationError
from checkpoints.sdk.medallion.errors import StoreError, store_errors
from checkpoints.sdk.medallion.models import Medallion, MedallionScope, adopt
from checkpoints.sdk.medallion.steps import create_document, load_steps, update_document


class MedallionStore(AsyncClosing):
    """Medallions stored by a Cairn server (validated there, every version kept as a revision).

    `MedallionStore(base_url, api_key)`, `MedallionStore(client=AsyncClient(...))` or `from_env()`.
    """

    _closer = "close"

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, *, client: AsyncClient | None = None
    ) -> None:
        if client is None and (base_url is None or api_key is None):
            raise ValueError("pass base_url and api_key, or client")
        self.client = client or AsyncClient(base_url or "", api_key or "")

    @classmethod
    def from_env(cls) -> MedallionStore:
        """A store for `CAIRN_URL` (default http://127.0.0.1:8000) with the key in `CAIRN_API_KEY`."""
        return cls(os.environ.get("CAIRN_URL", "http://127.0.0.1:8000"), os.environ["CAIRN_API_KEY"])

    async def create(self, medallion: Medallion) -> Medallion:
        """Store a new medallion. The server assigns its id, version and timestamps: they are written into
        `medallion.meta` and the stored medallion is returned. StoreError if an active medallion already
        has exactly this scope (update that one); SchemaValidationError if the document is invalid."""
        document = create_document(adopt(medallion))
        try:
            with store_errors():
                stored = adopt(await self.client.medallion_create(document))
        except StoreError as exc:
            if isinstance(exc.__cause__, Conflict):
                existing = exc.__cause__.details.get("medallion_id")
                # The seed's wording; Cairn's rule is one active medallion per exact (normalised) scope.
                raise StoreError(
                    f"Medallion with ID {existing} already exists for this exact scope (one active medallion "
                    "per scope): update it, or mark it stale first"
                ) from exc.__cause__
            raise
        medallion.meta = stored.meta
        return stored

    async def update(self, medallion: Medallion, *, expected_version: int | None = None) -> Medallion:
        """Store a new version of an existing medallion (its scope stays); returns it. StoreError if it
        does not exist, or if `expected_version` is given and the medallion has moved on."""
        medallion_id = medallion.meta.medallion_id
        document = update_document(adopt(medallion))
        with store_errors():
            stored = adopt(
                await self.client.medallion_update(medallion_id, document, expected_version=expected_version)
            )
        medallion.meta = stored.meta
        return stored

    async def get_by_id(self, medallion_id: str) -> Medallion | None:
        """The medallion, or None if there is none with this id."""
        try:
            with store_errors():
                return adopt(await self.client.medallion_get(medallion_id))
        except StoreError as exc:
            if isinstance(exc.__cause__, NotFound | ValidationError):
                return None
            raise

    async def get_latest_for_scope(self, scope: MedallionScope, limit: int = 10) -> list[Medallion]:
        """Active medallions whose graph_nodes include all of `scope.graph_nodes` and whose tags overlap
        `scope.tags`, newest update first; every match is found. ValueError for an empty scope or a limit
        below 1."""
        with store_errors():
            return await arun(self.client, load_steps(MedallionScope.model_validate(scope.to_dict()), limit))

    async def close(self) -> None:
        await self.client.aclose()


class SQLiteMedallionStore:
    """The seed's local store is not part of Cairn: constructing it says which line to change."""

    def __init__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise StoreError(
            "medallion's SQLite store is not part of Cairn: medallions live on the Cairn server. Replace "
            "`SQLiteMedallionStore(...)` with `MedallionStore.from_env()` (CAIRN_URL, CAIRN_API_KEY) or "
            "`MedallionStore(base_url, api_key)`."
        )
