"""A scripted OpenAI-compatible /v1/chat/completions server on 127.0.0.1 for tests and benchmarks.

Each request is answered by a behaviour: the script whose marker occurs in the request's messages
(behaviours consumed in order, the last one repeating), else `default`. Behaviours: Reply (any
content: valid, fenced, malformed, truncated JSON; optional delay, logprobs, usage), Status (500,
429, ... with Retry-After), Drop (connection closed without a reply), Cut (reply body cut short),
Garbage (200 with a non-JSON body), BadHTTP (a response that is not HTTP: a broken status line).
GET /v1/models lists `models` (what the client's probe asks). Every request body is recorded; `count` and `max_in_flight`
let tests assert how many calls were made and how many ran at once.

    from scripted_server import Reply, Status, ScriptedServer, scripted_server   # fixture
    with ScriptedServer(latency=0.2) as server:
        server.script("case:flaky", Status(500), Reply(ok_review("yes", 0.8)))
        url = server.base_url

`python tests/scripted_server.py --latency 0.2` serves the default reply and prints its base URL.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def ok_review(review: str = "yes", confidence: float = 0.8, reasoning: str = "Plausible.") -> str:
    return json.dumps({"reasoning": reasoning, "review": review, "confidence": confidence})


@dataclass
class Reply:
    content: str = field(default_factory=ok_review)
    delay: float = 0.0
    finish_reason: str = "stop"
    logprobs: list | None = None  # OpenAI-style entries: {token, logprob, top_logprobs}
    cached_tokens: int | None = None


@dataclass
class Status:
    code: int = 500
    delay: float = 0.0
    retry_after_ms: int | None = 10  # short, so tests do not wait on the client's default backoff


@dataclass
class Drop:
    delay: float = 0.0


@dataclass
class Cut:
    content: str = field(default_factory=ok_review)
    delay: float = 0.0


@dataclass
class Garbage:
    body: str = "<html>upstream error</html>"
    delay: float = 0.0


@dataclass
class BadHTTP:
    raw: bytes = b"HTTP/1.1 OK-ish\r\nContent-Length: 2\r\n\r\n{}"
    delay: float = 0.0


Behaviour = Reply | Status | Drop | Cut | Garbage | BadHTTP


class ScriptedServer:
    def __init__(self, default: Behaviour | None = None, latency: float = 0.0, port: int = 0,
                 models: tuple[str, ...] = ("scripted-model",)):
        self.default = default or Reply()
        self.models = models  # what GET /v1/models lists
        self.latency = latency
        self.requests: list[dict] = []
        self.authorizations: list[str | None] = []
        self.paths: list[str] = []  # request paths with their query
        self.max_in_flight = 0
        self._scripts: list[tuple[str, deque]] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None

    def script(self, marker: str, *behaviours: Behaviour) -> None:
        self._scripts.append((marker, deque(behaviours)))

    @property
    def count(self) -> int:
        return len(self.requests)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _choose(self, body: dict) -> Behaviour:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        with self._lock:
            self.requests.append(body)
            for marker, queue in self._scripts:
                if marker in text:
                    return queue.popleft() if len(queue) > 1 else queue[0]
        return self.default

    def start(self) -> "ScriptedServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers
            disable_nagle_algorithm = True  # headers and body are two writes: avoid the 40 ms delayed-ACK stall

            def log_message(self, *args) -> None:
                pass

            def _send(self, code: int, payload: bytes, ctype: str = "application/json", headers=()) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                server.authorizations.append(self.headers.get("Authorization"))
                server.paths.append(self.path)
                if self.path.rstrip("/").endswith("/models"):
                    data = [{"id": m, "object": "model", "owned_by": "scripted"} for m in server.models]
                    self._send(200, json.dumps({"object": "list", "data": data}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"{}")
                server.authorizations.append(self.headers.get("Authorization"))
                server.paths.append(self.path)
                behaviour = server._choose(body)
                with server._lock:
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                try:
                    time.sleep(server.latency + behaviour.delay)
                    self._act(behaviour, body)
                finally:
                    with server._lock:
                        server._in_flight -= 1

            def _act(self, b: Behaviour, body: dict) -> None:
                if isinstance(b, Status):
                    headers = [("retry-after-ms", str(b.retry_after_ms))] if b.retry_after_ms is not None else []
                    err = {"error": {"message": f"scripted {b.code}", "type": "server_error", "code": b.code}}
                    self._send(b.code, json.dumps(err).encode(), headers=headers)
                elif isinstance(b, Drop):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif isinstance(b, BadHTTP):
                    self.wfile.write(b.raw)
                    self.wfile.flush()
                    self.close_connection = True
                elif isinstance(b, Garbage):
                    self._send(200, b.body.encode(), ctype="text/html")
                elif isinstance(b, Cut):
                    payload = json.dumps(completion(body, b.content)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                else:
                    self._send(200, json.dumps(completion(body, b.content, b)).encode())

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False  # a scripted hang must not block shutdown
            request_queue_size = 256

            def handle_error(self, request, client_address) -> None:
                pass  # dropped and cut connections are the point, not errors

        self._httpd = Server(("127.0.0.1", self._port), Handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def completion(body: dict, content: str, reply: Reply | None = None) -> dict:
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(content.split()),
             "total_tokens": prompt_tokens + len(content.split())}
    choice = {"index": 0, "message": {"role": "assistant", "content": content},
              "finish_reason": reply.finish_reason if reply else "stop"}
    if reply is not None and reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    if reply is not None and reply.logprobs is not None and body.get("logprobs"):
        choice["logprobs"] = {"content": reply.logprobs}
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "scripted"), "choices": [choice], "usage": usage}


@pytest.fixture
def scripted_server():
    with ScriptedServer() as server:
        yield server


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    srv = ScriptedServer(latency=args.latency, port=args.port).start()
    print(srv.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        srv.stop()
