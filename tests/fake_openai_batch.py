"""A local fake of OpenAI's chat, files and batch endpoints (aiohttp on 127.0.0.1).

Replies are a pure function of the request (messages and seed), so the direct path and the
batch path get the same answers. The server runs on its own thread and stops by itself after
`lifetime_s` even when a test forgets it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from typing import Any

from aiohttp import web

LETTERS = "ABCD"


def reply_for(body: dict[str, Any]) -> str:
    text = json.dumps([body.get("messages"), body.get("seed")], sort_keys=True)
    last = str(body["messages"][-1]["content"])
    if last.startswith(("Reply with one word:", "Reply with the single word:")):
        return last.rsplit(":", 1)[1].strip()  # the roster check: the word it asks for
    return LETTERS[int(hashlib.sha256(text.encode()).hexdigest(), 16) % 4]


def logprobs_for(body: dict[str, Any], reply: str) -> dict[str, Any] | None:
    """Next-token log-probabilities when asked: the reply's letter most likely, the rest spread."""
    if not body.get("logprobs"):
        return None
    top = [{"token": letter, "logprob": -0.2 if letter == reply else -2.5 - i / 10} for i, letter in enumerate(LETTERS)]
    return {"content": [{"token": reply, "logprob": -0.2, "top_logprobs": top[: body.get("top_logprobs", 4)]}]}


def completion(body: dict[str, Any]) -> dict[str, Any]:
    prompt = sum(len(str(m.get("content", ""))) for m in body["messages"]) // 4 + 3
    reply = reply_for(body)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
                "logprobs": logprobs_for(body, reply),
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1},
    }


class FakeOpenAI:
    def __init__(self, *, polls_before_done: int = 1, complete: bool = True, lifetime_s: float = 120.0) -> None:
        self.polls_before_done = polls_before_done
        self.complete = complete
        self.lifetime_s = lifetime_s
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.polls: dict[str, int] = {}
        self.chat_calls = 0
        self.port = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- endpoints ---------------------------------------------------------------------------
    async def chat(self, request: web.Request) -> web.Response:
        self.chat_calls += 1
        return web.json_response(completion(await request.json()))

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        data = form["file"].file.read()  # type: ignore[union-attr]
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        return web.json_response(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": 0,
                "filename": "requests.jsonl",
                "purpose": "batch",
                "status": "processed",
            }
        )

    def _batch(self, batch_id: str) -> dict[str, Any]:
        return self.batches[batch_id]

    async def create_batch(self, request: web.Request) -> web.Response:
        body = await request.json()
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"],
            "status": "validating",
            "created_at": 0,
            "output_file_id": None,
            "error_file_id": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
        }
        self.polls[batch_id] = 0
        return web.json_response(self.batches[batch_id])

    async def retrieve_batch(self, request: web.Request) -> web.Response:
        batch = self._batch(request.match_info["batch_id"])
        self.polls[batch["id"]] += 1
        if batch["status"] != "completed":
            batch["status"] = "in_progress"
            if self.complete and self.polls[batch["id"]] >= self.polls_before_done:
                lines = [json.loads(x) for x in self.files[batch["input_file_id"]].decode().splitlines() if x.strip()]
                out = "".join(
                    json.dumps(
                        {
                            "id": f"req-{i}",
                            "custom_id": line["custom_id"],
                            "response": {"status_code": 200, "request_id": f"r{i}", "body": completion(line["body"])},
                            "error": None,
                        }
                    )
                    + "\n"
                    for i, line in enumerate(lines)
                )
                output_id = f"file-{len(self.files) + 1}"
                self.files[output_id] = out.encode()
                batch.update(
                    status="completed",
                    output_file_id=output_id,
                    request_counts={"total": len(lines), "completed": len(lines), "failed": 0},
                )
        return web.json_response(batch)

    async def content(self, request: web.Request) -> web.Response:
        return web.Response(body=self.files[request.match_info["file_id"]], content_type="application/octet-stream")

    # -- lifecycle ---------------------------------------------------------------------------
    def _serve(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/files", self.upload)
        app.router.add_post("/v1/batches", self.create_batch)
        app.router.add_get("/v1/batches/{batch_id}", self.retrieve_batch)
        app.router.add_get("/v1/files/{file_id}/content", self.content)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._ready.set()
        try:
            await asyncio.wait_for(self._stop.wait(), self.lifetime_s)
        except TimeoutError:
            pass
        await runner.cleanup()

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
