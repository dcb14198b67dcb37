"""One code path to every LLM: the `openai` client over an OpenAI-compatible /v1/chat/completions
endpoint (vLLM on a GPU machine, or the embedded llama.cpp server), with bounded concurrency, a
request timeout, retries with backoff, a persistent reply cache and per-call accounting.

The HTTP transport is the SDK's aiohttp one (`openai.DefaultAioHttpClient`, `transport: aiohttp`):
httpx's connection pool scans every idle connection on each request, which made client CPU per
call grow with concurrency (2.7 ms per call at 64 in flight; 1.2-1.5 ms with aiohttp; bench/bench_review.py).
`transport: httpx` selects the SDK's default transport.

Retries are the openai client's own (`max_retries`): exponential backoff from 0.5 s to 8 s with
jitter, honouring Retry-After, on connection errors, timeouts, 408/409/429 and 5xx. A call that
still fails becomes a ReviewResult with `failure` set and falls back per `method.on_failure`. When
more than `max_call_failure_rate` of a batch's calls get no reply at all, the server is down or
misconfigured: the batch raises LLMCallError (after every in-flight call has finished and been
cached) rather than let a HyGRAIL cell quietly turn into a GNN-only one.

The API key is read from the environment variable the config names and handed only to the HTTP
client: it is not part of the cached request, the returned config or any log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

import aiohttp
import httpx2  # openai's HTTP types
import openai
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from hygrail.review.cache import ReplyCache, request_key
from hygrail.review.calibrate import DECISIONS
from hygrail.review.contract import (
    REASONING,
    LLMCallError,
    ParseError,
    Example,
    ReviewRequest,
    ReviewResult,
    commonest_failure,
    p_yes_from_logprobs,
    parse_review,
    review_fields,
    review_schema,
    strip_thinking,
    trim_logprobs,
)
from hygrail.review.prompts import STYLES, review_messages

log = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {
    "name": None,
    "model": None,
    "base_url": None,  # null + an `embedded` block: start the embedded server on first use
    "api_key_env": None,  # name of the environment variable holding the key (never the key)
    "max_tokens": 1024,
    "temperature": 0.2,
    "top_p": 0.9,
    "timeout": 180.0,
    "max_retries": 3,
    "concurrency": 8,
    "transport": "aiohttp",
    "max_call_failure_rate": 0.25,
    "extra_body": None,  # server-specific request fields, e.g. vLLM's skip_special_tokens
    "seed": None,  # sampling seed sent with every request (the pipeline passes the cell's seed)
    "chat_template_kwargs": None,
    "structured_output": "response_format",
    "confidence": "stated",
    "top_logprobs": 10,
    "prompt": "full",
    "reasoning_max_chars": None,
    "reasoning": "full",  # full (paper) | clause | none: how much free text a reply carries
    "decision": "paper",  # paper: yes and confidence >= gamma | probability: confidence >= gamma (calibrate.py)
    "fewshot": None,  # solved training examples in the prompt prefix (hygrail/review/fewshot.py)
    "embedded": None,
    "serve": None,
}
STRUCTURED = ("response_format", "structured_outputs", "none")
CONFIDENCE = ("stated", "logprob")
TRANSPORTS = ("aiohttp", "httpx")
_NO_KEY = "EMPTY"  # local vLLM / llama.cpp servers accept any key, the openai client wants one


def llm_settings(llm_cfg: Mapping) -> dict:
    """The llm config group merged over DEFAULTS and checked; interpolations resolved."""
    if isinstance(llm_cfg, DictConfig):
        llm_cfg = OmegaConf.to_container(llm_cfg, resolve=True, throw_on_missing=True)
    cfg = {**DEFAULTS, **dict(llm_cfg)}
    for key, allowed in (("structured_output", STRUCTURED), ("confidence", CONFIDENCE), ("prompt", STYLES),
                         ("transport", TRANSPORTS), ("reasoning", REASONING), ("decision", DECISIONS)):
        if cfg[key] not in allowed:
            raise ValueError(f"llm.{key}={cfg[key]!r}: expected one of {allowed}")
    if not cfg["model"]:
        raise ValueError("llm.model is not set: expected the served model name")
    if cfg["base_url"] is None and not cfg["embedded"]:
        raise ValueError("llm.base_url is not set: expected the server's URL (e.g. http://127.0.0.1:8001/v1)")
    if int(cfg["concurrency"]) < 1:
        raise ValueError(f"llm.concurrency={cfg['concurrency']}: expected >= 1")
    if not 0.0 <= float(cfg["max_call_failure_rate"]) <= 1.0:
        raise ValueError(f"llm.max_call_failure_rate={cfg['max_call_failure_rate']}: expected a fraction in [0, 1]")
    return cfg


def _timeout_or_dropped(error: BaseException) -> str:
    """The SDK's aiohttp transport reports a connection the server dropped as a timeout
    (it maps aiohttp.ClientConnectionError to httpx.ConnectTimeout); name the real cause."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, asyncio.TimeoutError):
            return f"connection error: {type(cause).__name__}: {cause}"
        cause = cause.__cause__
    return "timeout"


class ReviewClient:
    """Reviews routed hypotheses and runs plain chats (LLM naturalization) against one model.

    `review_many`/`chat`/`chat_many` are synchronous wrappers (asyncio.run); from inside a
    running event loop use `areview_many`/`achat_many`."""

    def __init__(self, llm_cfg: Mapping, cache_path: Path | str | None, *, progress: bool = True):
        self.cfg = llm_settings(llm_cfg)
        self.cache = ReplyCache(cache_path) if cache_path is not None else None
        self.progress = progress
        self._embedded = None
        self._totals = dict.fromkeys(
            ("requests", "calls", "cache_hits", "failures", "call_failures", "retries", "prompt_tokens",
             "completion_tokens", "cached_tokens"), 0
        )
        self._seconds = {"seconds": 0.0, "wall_seconds": 0.0}

    # ---- public API -------------------------------------------------------------------------

    @property
    def review_first(self) -> bool:
        # P(yes) is read at the verdict token, so it must come before the free-text reasoning.
        return self.cfg["confidence"] == "logprob"

    def review_request(self, request: ReviewRequest, examples: Sequence[Example] = ()) -> dict:
        """The exact chat-completions request for one review (also its cache identity); ``examples``
        (the few-shot block) go into the fixed system prefix."""
        cfg = self.cfg
        # A logprob judge's confidence is P(yes) at the verdict token: no stated number needed.
        fields = review_fields(self.review_first, cfg["reasoning"], stated_confidence=cfg["confidence"] == "stated")
        messages = review_messages(request, cfg["prompt"], fields, cfg["reasoning"], examples)
        schema = review_schema(fields, cfg["reasoning_max_chars"])
        return self._request(messages, schema=schema, logprobs=cfg["confidence"] == "logprob")

    def review_many(self, requests: Sequence[ReviewRequest], examples: Sequence[Example] = ()) -> list[ReviewResult]:
        return asyncio.run(self.areview_many(requests, examples))

    async def areview_many(self, requests: Sequence[ReviewRequest], examples: Sequence[Example] = ()) -> list[ReviewResult]:
        bodies = [self.review_request(r, examples) for r in requests]
        replies = await self._run(bodies, desc="review")
        return [self._review_result(reply) for reply in replies]

    def chat(self, messages: list[dict], max_tokens: int | None = None) -> str:
        """One free-text completion; raises LLMCallError when no usable reply came back."""
        reply = asyncio.run(self._run([self._request(messages, max_tokens=max_tokens)], desc=None))[0]
        if reply.get("failure") or not reply.get("content"):
            raise LLMCallError(f"{self.cfg['name'] or self.cfg['model']}: {reply.get('failure') or 'empty reply'}")
        return reply["content"]

    def chat_many(self, conversations: Sequence[list[dict]], max_tokens: int | None = None) -> list[str | None]:
        """Free-text completions; None marks a call that failed (counted in usage()['failures'])."""
        return asyncio.run(self.achat_many(conversations, max_tokens))

    async def achat_many(self, conversations: Sequence[list[dict]], max_tokens: int | None = None) -> list[str | None]:
        replies = await self._run([self._request(m, max_tokens=max_tokens) for m in conversations], desc="chat")
        # Reasoning models (Ministral/Magistral) keep their thinking: it is not the answer.
        texts = [None if r.get("failure") else (strip_thinking(r.get("content") or "").strip() or None) for r in replies]
        self._totals["failures"] += sum(t is None and not r.get("failure") for t, r in zip(texts, replies))
        return texts

    def usage(self) -> dict:
        """Totals for this client. Tokens and `seconds` (server time) count every request, cached
        or not, so a resumed run reports the method's full cost; `calls`, `retries` and
        `wall_seconds` are what this process actually spent."""
        return {**self._totals, **{k: round(v, 3) for k, v in self._seconds.items()}}

    def close(self) -> None:
        if self._embedded is not None:
            self._embedded.stop()
            self._embedded = None
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> "ReviewClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- requests ---------------------------------------------------------------------------

    def _request(self, messages: list[dict], *, schema: dict | None = None, logprobs: bool = False,
                 max_tokens: int | None = None) -> dict:
        cfg = self.cfg
        body: dict[str, Any] = {
            "model": cfg["model"],
            "messages": messages,
            "temperature": cfg["temperature"],
            "top_p": cfg["top_p"],
            "max_tokens": int(max_tokens or cfg["max_tokens"]),
        }
        if cfg["seed"] is not None:
            body["seed"] = int(cfg["seed"])
        # Server-specific fields go straight into the JSON body (what openai's extra_body does):
        # the body is the exact wire request, and its hash the cache key.
        if cfg["chat_template_kwargs"]:
            body["chat_template_kwargs"] = dict(cfg["chat_template_kwargs"])
        if cfg["extra_body"]:
            body.update(cfg["extra_body"])
        if schema is not None and cfg["structured_output"] == "response_format":
            # Accepted by vLLM and by llama.cpp's server (grammar built from the schema).
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "review", "schema": schema}}
        elif schema is not None and cfg["structured_output"] == "structured_outputs":
            body["structured_outputs"] = {"json": schema}  # vLLM >= 0.12 extra parameter
        if logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = int(cfg["top_logprobs"])
        return body

    def _endpoint(self) -> str:
        if self.cfg["base_url"]:
            return self.cfg["base_url"]
        if self._embedded is None:
            from hygrail.review.embedded import EmbeddedServer

            self._embedded = EmbeddedServer.from_config(self.cfg["embedded"]).start()
        return self._embedded.base_url

    def _api_key(self) -> str:
        name = self.cfg["api_key_env"]
        return (os.environ.get(name) if name else None) or _NO_KEY

    async def _run(self, bodies: list[dict], desc: str | None) -> list[dict]:
        """Replies for `bodies` in order: from the cache, else from the server (identical
        requests are sent once). A reply dict has `failure` set when no reply came back."""
        start = time.perf_counter()
        keys = [request_key(b, self.model_identity) for b in bodies]
        replies: dict[str, dict] = {}
        cached: set[str] = set()
        if self.cache is not None:
            for k in dict.fromkeys(keys):
                hit = self.cache.get(k)
                if hit is not None:
                    replies[k] = hit
                    cached.add(k)
        todo = {k: b for k, b in zip(keys, bodies) if k not in replies}
        bar = tqdm(total=len(bodies), desc=f"LLM {desc} ({self.cfg['name'] or self.cfg['model']})",
                   unit=desc, disable=not (self.progress and desc), leave=False)
        bar.update(len(bodies) - sum(k in todo for k in keys))
        try:
            if todo:
                await self._send(todo, Counter(keys), replies, bar)
        finally:
            bar.close()  # before any error line, so the line is not glued to the bar
        out, sent = [], set()
        for k in keys:
            reply = dict(replies[k])
            reply["cache_hit"] = k in cached
            # A request repeated in the batch was sent once: its retries count once.
            reply["retries"] = reply.get("retries", 0) if k in todo and k not in sent else 0
            sent.add(k)
            self._account(reply)
            out.append(reply)
        self._seconds["wall_seconds"] += time.perf_counter() - start
        return out

    async def _send(self, todo: dict[str, dict], copies: Counter, replies: dict[str, dict], bar) -> None:
        """Send the uncached requests, at most `concurrency` at once; replies land in `replies`."""
        sem = asyncio.Semaphore(int(self.cfg["concurrency"]))
        http_client = openai.DefaultAioHttpClient() if self.cfg["transport"] == "aiohttp" else None
        async with openai.AsyncOpenAI(
            base_url=self._endpoint(), api_key=self._api_key(), http_client=http_client,
            timeout=float(self.cfg["timeout"]), max_retries=int(self.cfg["max_retries"]),
        ) as client:

            async def one(key: str, body: dict) -> None:
                async with sem:
                    replies[key] = await self._call(client, key, body)
                bar.update(copies[key])

            # return_exceptions: a call that raises lets the others finish (and be cached) first.
            outcomes = await asyncio.gather(*(one(k, b) for k, b in todo.items()), return_exceptions=True)
        errors = [e for e in outcomes if isinstance(e, BaseException)]
        if errors:
            raise errors[0]
        self._check_failures([replies[k]["failure"] for k in todo if replies[k].get("failure")], len(todo))

    @property
    def model_identity(self) -> str | None:
        """What the cache key must hold beyond the request: the embedded server answers whatever
        file it loaded, whatever the `model` label says."""
        emb = self.cfg["embedded"]
        return json.dumps(emb["model"], sort_keys=True) if emb and not self.cfg["base_url"] else None

    def _check_failures(self, failures: list[str], n_sent: int) -> None:
        if not failures:
            return
        kind, times, reason = commonest_failure(failures)
        name = self.cfg["name"] or self.cfg["model"]
        log.warning("%s: %d of %d calls got no reply (%d %s, e.g. %r)", name, len(failures), n_sent, times, kind, reason)
        rate = float(self.cfg["max_call_failure_rate"])
        if len(failures) > rate * n_sent:
            raise LLMCallError(
                f"llm {name} at {self.cfg['base_url'] or 'the embedded server'}: {len(failures)} of {n_sent} calls got "
                f"no reply ({times} {kind}, e.g. {reason!r}), over llm.max_call_failure_rate={rate}; check that the server is up "
                f"and its URL/key; replies that came back are cached, a rerun sends only the rest")

    async def _call(self, client: openai.AsyncOpenAI, key: str, body: dict) -> dict:
        cfg = self.cfg
        retries_max = int(cfg["max_retries"])
        # httpx's timeout bounds each read, so a server trickling bytes could run forever: bound
        # the whole call by every attempt timing out plus the longest backoff between attempts.
        deadline = float(cfg["timeout"]) * (retries_max + 1) + 8.0 * retries_max
        t0 = time.perf_counter()
        self._totals["calls"] += 1
        try:
            # client.post skips the SDK's typed-request transform (a third of its CPU per call);
            # timeout, retries and backoff still apply.
            response = await asyncio.wait_for(
                client.post("/chat/completions", cast_to=httpx2.Response, body=body), deadline)
            data = response.json()
            retries = int(response.request.headers.get("x-stainless-retry-count", 0))
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (openai.APITimeoutError, asyncio.TimeoutError) as e:
            return {"failure": _timeout_or_dropped(e), "retries": retries_max, "latency": time.perf_counter() - t0}
        except openai.APIConnectionError as e:
            return {"failure": f"connection error: {e.__cause__ or e}", "retries": retries_max,
                    "latency": time.perf_counter() - t0}
        except openai.APIStatusError as e:
            retryable = e.status_code in (408, 409, 429) or e.status_code >= 500
            detail = f": {' '.join(e.message.split())[:200]}" if e.message else ""  # e.g. llama.cpp's context-size error
            return {"failure": f"HTTP {e.status_code}{detail}", "retries": retries_max if retryable else 0,
                    "latency": time.perf_counter() - t0}
        except aiohttp.ClientError as e:  # e.g. a bad status line: outside the SDK's aiohttp error map
            detail = " ".join(str(e).split())[:300]
            return {"failure": f"bad response: {type(e).__name__}: {detail}", "retries": 0, "latency": time.perf_counter() - t0}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            return {"failure": f"bad response: {type(e).__name__}", "retries": 0, "latency": time.perf_counter() - t0}
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        logprobs = (choice.get("logprobs") or {}).get("content") or []
        reply = {
            "content": content,
            "finish_reason": choice.get("finish_reason"),
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
            "cached_tokens": details.get("cached_tokens"),
            "logprobs": trim_logprobs(logprobs) if body.get("logprobs") else None,
            "latency": time.perf_counter() - t0,
        }
        if self.cache is not None:
            try:
                # First writer wins: a parallel job that sent the same request uses the same reply.
                reply = self.cache.put(key, body, reply)
            except sqlite3.Error as e:  # locked past the busy timeout, disk full: keep the reply
                log.warning("reply cache %s: %s; reply kept in memory only", self.cache.path, e)
        return {**reply, "retries": retries}

    def _account(self, reply: dict) -> None:
        t = self._totals
        t["requests"] += 1
        t["cache_hits"] += reply["cache_hit"]
        t["retries"] += reply["retries"]
        t["failures"] += bool(reply.get("failure"))
        t["call_failures"] += bool(reply.get("failure"))  # no reply; `failures` adds unusable replies
        t["prompt_tokens"] += reply.get("prompt_tokens", 0)
        t["completion_tokens"] += reply.get("completion_tokens", 0)
        t["cached_tokens"] += reply.get("cached_tokens") or 0
        self._seconds["seconds"] += reply.get("latency", 0.0)

    def _review_result(self, reply: dict) -> ReviewResult:
        meta = {
            "raw": reply.get("content", ""),
            "finish_reason": reply.get("finish_reason"),
            "prompt_tokens": reply.get("prompt_tokens", 0),
            "completion_tokens": reply.get("completion_tokens", 0),
            "cached_tokens": reply.get("cached_tokens"),
            "latency": reply.get("latency", 0.0),
            "retries": reply["retries"],
            "cache_hit": reply["cache_hit"],
        }
        if reply.get("failure"):
            return ReviewResult(None, None, None, "", failure=reply["failure"], **meta)
        try:
            parsed = parse_review(meta["raw"])
        except ParseError as e:
            cut = " (cut off at max_tokens)" if meta["finish_reason"] == "length" else ""
            self._totals["failures"] += 1
            return ReviewResult(None, None, None, "", failure=f"unparseable reply: {e}{cut}", **meta)
        confidence, source = parsed.confidence, "stated"
        if self.cfg["confidence"] == "logprob":
            p_yes = p_yes_from_logprobs(reply.get("logprobs") or [])
            if p_yes is not None:
                confidence, source = p_yes, "logprob"
        if confidence is None:
            self._totals["failures"] += 1
            return ReviewResult(None, None, None, parsed.reasoning, failure="no readable confidence", **meta)
        return ReviewResult(parsed.review, confidence, source, parsed.reasoning, failure=None,
                            salvaged=parsed.salvaged, **meta)
