"""An agent behind a web server: a Starlette app streaming its events as server-sent events.

    pip install 'uvicorn>=0.30' 'starlette>=0.40'
    uvicorn --app-dir examples sse_app:app
    curl -N 'http://127.0.0.1:8000/ask?q=what+is+2+%2B+3'

``GET /ask?q=...`` gives the agent ``q`` and streams what it does, one event per line pair
(``event: BeforeToolExecute`` / ``data: {...}``, the data as JSON), the ``Reply`` last. The
agent is opened when the app starts (its lifespan) and closed when it stops; requests share
it, each run after the one before (``send``'s queue). Offline by default (the ``echo``
model); ``SSE_APP_MODEL`` names another (``scripted:examples/add_script.json``,
``openai:gpt-4o-mini``), ``LIVECONTEXT_STORE`` the store (docs/asyncio.md, "Under an ASGI
server").
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

import livecontext
import livecontext.aio
from livecontext.protocol.wire import make_converter

MODEL = os.environ.get("SSE_APP_MODEL", "echo")
STORE = os.environ.get("LIVECONTEXT_STORE", "sqlite:sse_app.db")
converter = make_converter()


@livecontext.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[dict[str, livecontext.aio.AioAgent]]:
    async with livecontext.aio.open_agent(model=MODEL, tools=[add], store=STORE, thread="web") as agent:
        yield {"agent": agent}  # (request.state.agent in the endpoints)


async def ask(request: Request) -> Response:
    question = request.query_params.get("q", "").strip()
    if not question:
        return PlainTextResponse("ask with a question: /ask?q=...\n", status_code=400)
    agent: livecontext.aio.AioAgent = request.state.agent

    async def events() -> AsyncIterator[str]:
        async for item in agent.stream(question):  # the engine's events, then the Reply
            data = json.dumps(converter.unstructure(item))
            yield f"event: {type(item).__name__}\ndata: {data}\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


app = Starlette(routes=[Route("/ask", ask)], lifespan=lifespan)

if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=8000)
