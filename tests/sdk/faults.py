"""An httpx transport that sits between the SDK and the live server and injects network and server failures
for chosen requests (the server itself is real; only the wire misbehaves)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import httpx

from checkpoints.sdk import Client, RetryPolicy

FAST_RETRIES = RetryPolicy(max_retries=3, backoff_base=0.01, backoff_max=0.05)


@dataclass
class Fault:
    """`kind`: "lost" (the server handles the request, the answer never arrives) or "503" (a synthetic 503
    answered before the request reaches the server). Applies to the first `times` matching requests."""

    method: str
    path_contains: str
    kind: str
    times: int = 1


@dataclass
class FaultyTransport(httpx.BaseTransport):
    faults: list[Fault]
    seen: list[tuple[str, str]] = field(default_factory=list)
    real: httpx.HTTPTransport = field(default_factory=httpx.HTTPTransport)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.method, request.url.path))
        for fault in self.faults:
            if fault.times and request.method == fault.method and fault.path_contains in request.url.path:
                fault.times -= 1
                if fault.kind == "503":
                    body = {"error": {"code": "unavailable", "message": "injected", "details": {}}}
                    return httpx.Response(503, content=json.dumps(body).encode(), request=request)
                response = self.real.handle_request(request)
                response.read()
                response.close()
                raise httpx.ReadError("the connection dropped after the server answered", request=request)
        return self.real.handle_request(request)

    def close(self) -> None:
        self.real.close()

    def count(self, method: str, path_contains: str) -> int:
        return sum(1 for m, path in self.seen if m == method and path_contains in path)


def faulty_client(base_url: str, api_key: str, *faults: Fault) -> tuple[Client, FaultyTransport]:
    transport = FaultyTransport(list(faults))
    http = httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {api_key}"}, transport=transport
    )
    return Client(base_url, api_key, http_client=http, retry=FAST_RETRIES), transport
