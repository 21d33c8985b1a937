"""`with` / `async with` support shared by the SDK's clients, stores and savers: entering returns the object,
leaving closes it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import ClassVar, Self


class Closing(ABC):
    """`with obj:` returns `obj` and calls its `close()` on the way out."""

    @abstractmethod
    def close(self) -> None:
        """Release what the object holds (its HTTP connections)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClosing:
    """`async with obj:` returns `obj` and awaits its closing coroutine on the way out: `aclose()`, or the
    method `_closer` names (the seeds' async APIs call it `close`)."""

    _closer: ClassVar[str] = "aclose"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await getattr(self, self._closer)()
