"""The seat's local web server (aiohttp), on 127.0.0.1 only.

`GET /` is the page (pipeline.seat.page), `GET /state?since=N` the session's view as JSON,
`POST /move` with `{"key": ..., "text": ...}` (JSON only) plays the waiting turn. Requests whose Host
is not this server's loopback address are refused, so a web page elsewhere cannot reach the seat
through a rebound DNS name, and a cross-site form cannot post a move (it cannot send JSON).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable

from aiohttp import web

from pipeline.core.artifacts.params import InputError
from pipeline.seat.page import CONTENT_SECURITY_POLICY, HTML
from pipeline.seat.session import SeatSession

HOST = "127.0.0.1"
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_app(session: SeatSession, port: int) -> web.Application:
    hosts = {f"{HOST}:{port}", f"localhost:{port}"}

    @web.middleware
    async def loopback_only(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.host not in hosts:
            raise web.HTTPForbidden(text=f"this seat answers only at http://{HOST}:{port}/")
        return await handler(request)

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=HTML, content_type="text/html", charset="utf-8", headers=PAGE_HEADERS)

    async def state(request: web.Request) -> web.Response:
        try:
            since = max(0, int(request.query.get("since", "0")))
        except ValueError:
            raise web.HTTPBadRequest(text="since must be an integer") from None
        return web.json_response(session.view(since), headers={"Cache-Control": "no-store"})

    async def move(request: web.Request) -> web.Response:
        if request.content_type != "application/json":
            raise web.HTTPUnsupportedMediaType(text="send the move as JSON: {key, text}")
        try:
            body = await request.json()
        except ValueError:
            raise web.HTTPBadRequest(text="the body is not JSON") from None
        key, text = (body.get("key"), body.get("text")) if isinstance(body, dict) else (None, None)
        if not isinstance(key, str) or not isinstance(text, str):
            raise web.HTTPBadRequest(text="send {key: the turn's key, text: the move}, both strings")
        try:
            session.answer(key, text)
        except ValueError as exc:
            raise web.HTTPConflict(text=str(exc)) from None
        return web.json_response({"sent": key})

    app = web.Application(middlewares=[loopback_only], client_max_size=1 << 20)
    app.add_routes([web.get("/", page), web.get("/state", state), web.post("/move", move)])
    return app


def bind(port: int) -> socket.socket:
    """A listening socket on the loopback address (`port` 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise InputError(
            f"--port {port}: cannot listen on {HOST}:{port} ({exc.strerror}); pick another, or 0 for any free port"
        ) from None
    sock.listen(16)
    return sock


class SeatServer:
    """The page's server on a thread of its own, from `start()` (which returns its URL) to `stop()`."""

    def __init__(self, session: SeatSession, port: int) -> None:
        self.sock = bind(port)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://{HOST}:{self.port}/"
        self._app = make_app(session, self.port)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="seat-server", daemon=True)
        self._runner: web.AppRunner | None = None

    def start(self) -> str:
        self._thread.start()
        self._ready.wait()
        return self.url

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self._app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.SockSite(self._runner, self.sock).start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
