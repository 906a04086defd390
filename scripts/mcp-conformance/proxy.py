"""A pass-through proxy that adds `Authorization: Bearer $KEY` to every request, so the
MCP conformance runner (which sends no credentials) can reach an authenticated endpoint.
Everything else, Host and Origin included, is forwarded as received; answers (SSE
included) stream back unchanged.

    UPSTREAM=http://127.0.0.1:PORT KEY=... python proxy.py PORT
"""

import os
import sys

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

UPSTREAM = os.environ["UPSTREAM"]
KEY = os.environ["KEY"]
client = httpx.AsyncClient(base_url=UPSTREAM, timeout=None)


async def forward(request: Request):
    headers = [(k, v) for k, v in request.headers.items() if k.lower() != "content-length"]
    headers.append(("authorization", f"Bearer {KEY}"))
    body = await request.body()
    upstream = client.build_request(
        request.method, request.url.path, headers=headers, content=body
    )
    response = await client.send(upstream, stream=True)
    passthrough = {
        k: v
        for k, v in response.headers.items()
        if k.lower() not in ("content-length", "transfer-encoding", "connection")
    }
    return StreamingResponse(
        response.aiter_raw(),
        status_code=response.status_code,
        headers=passthrough,
        background=None,
    )


app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST", "DELETE"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
