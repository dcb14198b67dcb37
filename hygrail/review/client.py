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

Replies that came back incomplete are not answers: a 200 whose body is not a completion (a proxy's
error page, a broken status line) or whose finish reason is neither `stop` nor `length` (`abort`,
none: the generation was cut off) is retried like a 5xx, with the same backoff, and recorded as a
failure if it never completes. Only complete replies are cached: finish reason `stop`, or `length`
for a review whose verdict could still be read (salvaged); a rerun sends the others again.

Several replicas of one served model (`llm.base_url` as a list, or comma-separated in the URL's
environment variable) share the load: each request goes to the replica with the most free slots,
and `llm.concurrency` bounds the requests in flight per replica across every process that shares
the reply cache (parallel sweep jobs, SLURM jobs on a shared filesystem), since vLLM queues what
exceeds its `max_num_seqs` and queued requests run into the client's timeout. `probe` asks each
replica for its model list once, so a sweep stops before any training when no server is up.

The API key is read from the environment variable the config names and handed only to the HTTP
client: it is not part of the cached request, the returned config or any log line, and URLs in
error messages are redacted (`hygrail.redact`).
"""

from __future__ import annotations

import asyncio
import base64
import fcntl
import hashlib
import json
import logging
import os
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import aiohttp
import httpx2  # openai's HTTP types
import openai
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from hygrail.redact import redact
from hygrail.review.cache import ReplyCache, request_key
from hygrail.review.calibrate import DECISIONS
from hygrail.review.contract import (
    CHARSETS,
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
from hygrail.review.prompts import STYLES, domain_words, review_messages

log = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {
    "name": None,
    "model": None,
    "base_url": None,  # a URL, a list of replicas' URLs; null + an `embedded` block: the embedded server
    "api_key_env": None,  # name of the environment variable holding the key (never the key)
    "max_tokens": 1024,
    "temperature": 0.2,
    "top_p": 0.9,
    "timeout": 180.0,
    "max_retries": 3,
    "concurrency": 8,  # in flight per replica, all processes sharing the reply cache together
    "transport": "aiohttp",
    "max_call_failure_rate": 0.25,
    "extra_body": None,  # server-specific request fields, e.g. vLLM's skip_special_tokens
    "seed": None,  # sampling seed sent with every request (the pipeline passes the cell's seed)
    "chat_template_kwargs": None,
    "structured_output": "response_format",
    "confidence": "stated",
    "top_logprobs": 10,
    "prompt": "full",
    "reasoning_max_chars": None,  # a reason this long was cut by the schema: shown with a trailing "…"
    "reasoning_charset": "any",  # any | latin (contract.LATIN: keeps a small model from switching script)
    "reasoning": "full",  # full (paper) | clause | none: how much free text a reply carries
    "decision": "paper",  # paper: yes and confidence >= gamma | probability: confidence >= gamma | calibrated (calibrate.py)
    "fewshot": None,  # solved training examples in the prompt prefix (hygrail/review/fewshot.py)
    "domain": None,  # the reviewer's field, from the KG's schema (prompts.domain_words); None: the paper's
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
                         ("transport", TRANSPORTS), ("reasoning", REASONING), ("decision", DECISIONS),
                         ("reasoning_charset", CHARSETS)):
        if cfg[key] not in allowed:
            raise ValueError(f"llm.{key}={cfg[key]!r}: expected one of {allowed}")
    domain_words(cfg["domain"])  # unknown keys stop here, before any request is built
    if not cfg["model"]:
        raise ValueError("llm.model is not set: expected the served model name")
    if cfg["base_url"] is None and not cfg["embedded"]:
        raise ValueError("llm.base_url is not set: expected the server's URL (e.g. http://127.0.0.1:8001/v1)")
    urls = endpoints(cfg)
    if any(not isinstance(u, str) or "://" not in u for u in urls):
        raise ValueError(f"llm.base_url={redact(str(cfg['base_url']))}: expected http(s) URLs (one, a list, or comma-separated)")
    if cfg["base_url"] is not None and not urls:
        raise ValueError("llm.base_url is empty: expected the server's URL (e.g. http://127.0.0.1:8001/v1)")
    if int(cfg["concurrency"]) < 1:
        raise ValueError(f"llm.concurrency={cfg['concurrency']}: expected >= 1")
    if not 0.0 <= float(cfg["max_call_failure_rate"]) <= 1.0:
        raise ValueError(f"llm.max_call_failure_rate={cfg['max_call_failure_rate']}: expected a fraction in [0, 1]")
    return cfg


def endpoints(cfg: Mapping) -> list[str]:
    """The replicas' base URLs: `base_url` as a list, or a string of comma-separated URLs."""
    url = cfg.get("base_url")
    if url is None:
        return []
    parts = url.split(",") if isinstance(url, str) else list(url)
    return [p.strip().rstrip("/") if isinstance(p, str) else p for p in parts if not isinstance(p, str) or p.strip()]


def probe(llm_cfg: Mapping, timeout: float = 10.0) -> list[str]:
    """The reachable replicas of `llm.base_url`, each asked once for its model list (GET /models,
    no retries). Raises LLMCallError naming why when none is reachable or one serves another model;
    warns about unreachable replicas when others answer. The embedded server (no base_url) is
    started by the client itself: nothing to probe."""
    cfg = llm_settings(llm_cfg)
    name = cfg["name"] or cfg["model"]
    live, down = [], []
    for url in endpoints(cfg):
        try:
            with openai.OpenAI(**_openai_kwargs(url, cfg), timeout=timeout, max_retries=0) as client:
                served = [m.id for m in client.models.list().data]
        except openai.APIStatusError as e:
            if e.status_code < 500 and e.status_code not in (401, 403):  # up, with no model list to check
                live.append(url)
                continue
            down.append(f"{redact(url)} (HTTP {e.status_code}{': check the API key' if e.status_code < 500 else ''})")
            continue
        except openai.APIConnectionError as e:  # refused, unresolvable, timed out
            down.append(f"{redact(url)} ({_cause(e)})")
            continue
        if served and cfg["model"] not in served:
            raise LLMCallError(f"llm {name} at {redact(url)} serves {served}, not {cfg['model']!r}: wrong server or llm.model")
        live.append(url)
    if down and not live:
        start = f" (make serve LLM={name})" if cfg["serve"] else ""
        raise LLMCallError(f"llm {name}: no server reachable at {'; '.join(down)}; start it{start} or point llm.base_url at it")
    if down:
        log.warning("llm %s: replica(s) %s unreachable; sending to the other %d", name, "; ".join(down), len(live))
    return live


def _cause(error: BaseException) -> str:
    """The innermost cause of a connection error, one line ("ConnectionRefusedError: ...")."""
    while error.__cause__ is not None:
        error = error.__cause__
    return " ".join(f"{type(error).__name__}: {error}".split())[:200]


def _api_key(cfg: Mapping) -> str:
    name = cfg["api_key_env"]
    return (os.environ.get(name) if name else None) or _NO_KEY


def _openai_kwargs(url: str, cfg: Mapping) -> dict:
    """Client arguments for one endpoint. Credentials in the URL travel as HTTP sends them, not as
    part of a URL that would end up in logs: userinfo (a proxy's basic auth) as the Authorization
    header, the query (``?token=...``) as a query on every request."""
    parts = urlsplit(url)
    kwargs: dict[str, Any] = {"base_url": urlunsplit(parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""),
                                                                 query="")), "api_key": _api_key(cfg)}
    if parts.query:
        kwargs["default_query"] = dict(parse_qsl(parts.query))
    if parts.username is not None:
        if cfg["api_key_env"] and os.environ.get(cfg["api_key_env"]):
            raise LLMCallError(f"llm.base_url={redact(url)} carries credentials and llm.api_key_env={cfg['api_key_env']} "
                               f"names a key: one Authorization header carries one of them; drop either")
        basic = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
        kwargs["default_headers"] = {"Authorization": f"Basic {basic}"}
    return kwargs


@dataclass
class _Slot:
    replica: int
    index: int
    fd: int | None


class Replicas:
    """Where each request goes, and when. A request takes a slot of the replica with the most free
    slots; a replica has `per_replica` slots in all. With `slots_dir`, a slot is a file
    ``slots_dir/<url hash>/<i>`` held by an exclusive ``flock``, so the bound holds across every
    process (and host, where the filesystem's locks work) sharing the directory, and a killed
    process frees its slots with its locks. Without it the bound is this process's alone.

    One task at a time looks for a slot (first come, first served); when all are taken it waits for
    one of this process's requests to finish or polls the others' slot files at 10-200 ms intervals,
    backing off while they stay taken (a few hundred non-blocking lock calls a second at most)."""

    def __init__(self, urls: Sequence[str], per_replica: int, slots_dir: Path | None):
        self.urls, self.n = list(urls), int(per_replica)
        self.held: list[set[int]] = [set() for _ in self.urls]
        self._files: list[list[int | None]] = [[None] * self.n for _ in self.urls]
        self._dirs = None
        if slots_dir is not None:
            self._dirs = [Path(slots_dir) / hashlib.sha256(u.encode()).hexdigest()[:16] for u in self.urls]
            for d in self._dirs:
                d.mkdir(parents=True, exist_ok=True)
        self._turn = asyncio.Lock()
        self._freed = asyncio.Event()

    async def acquire(self) -> _Slot:
        async with self._turn:
            wait = 0.01
            while (slot := self._try()) is None:
                self._freed.clear()
                try:
                    await asyncio.wait_for(self._freed.wait(), wait)
                    wait = 0.01
                except asyncio.TimeoutError:
                    wait = min(wait * 2, 0.2)
            return slot

    def release(self, slot: _Slot) -> None:
        if slot.fd is not None:
            fcntl.flock(slot.fd, fcntl.LOCK_UN)
        self.held[slot.replica].discard(slot.index)
        self._freed.set()

    def _try(self) -> _Slot | None:
        for r in sorted(range(len(self.urls)), key=lambda r: len(self.held[r])):
            free = [i for i in range(self.n) if i not in self.held[r]]
            random.shuffle(free)  # processes polling the same files should not all try slot 0 first
            for i in free:
                fd = self._lock(r, i) if self._dirs is not None else None
                if self._dirs is None or fd is not None:
                    self.held[r].add(i)
                    return _Slot(r, i, fd)
        return None

    def _lock(self, r: int, i: int) -> int | None:
        fd = self._files[r][i]
        if fd is None:
            fd = self._files[r][i] = os.open(self._dirs[r] / str(i), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            return None

    def close(self) -> None:
        for files in self._files:
            for i, fd in enumerate(files):
                if fd is not None:
                    os.close(fd)  # closing also drops a lock still held
                    files[i] = None


def _timeout_or_dropped(error: BaseException) -> str:
    """The SDK's aiohttp transport reports a connection the server dropped as a timeout
    (it maps aiohttp.ClientConnectionError to httpx.ConnectTimeout); name the real cause."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, asyncio.TimeoutError):
            return f"connection error: {type(cause).__name__}: {cause}"
        cause = cause.__cause__
    return "timeout"


def _complete_chat(reply: dict) -> bool:
    """A free-text reply worth caching: the model stopped by itself."""
    return reply.get("finish_reason") == "stop"


def _complete_review(reply: dict) -> bool:
    """A review worth caching: the model stopped by itself, or it hit max_tokens after the
    verdict (salvaged); a reply cut before its verdict is asked for again on a rerun."""
    if reply.get("finish_reason") == "stop":
        return True
    if reply.get("finish_reason") != "length":
        return False
    try:
        parse_review(reply.get("content") or "")
        return True
    except ParseError:
        return False


class ReviewClient:
    """Reviews routed hypotheses and runs plain chats (LLM naturalization) against one model.

    `review_many`/`chat`/`chat_many` are synchronous wrappers (asyncio.run); from inside a
    running event loop use `areview_many`/`achat_many`.

    `slots_dir`: where the per-replica in-flight slots live (see `Replicas`); by default beside the
    reply cache (``<cache_path's folder>/llm-slots``), so processes sharing a cache share the bound."""

    def __init__(self, llm_cfg: Mapping, cache_path: Path | str | None, *, progress: bool = True,
                 slots_dir: Path | str | None = None):
        self.cfg = llm_settings(llm_cfg)
        self.expert = domain_words(self.cfg["domain"])["expert"]  # for evidence modes' own prompts (mode.Chat)
        self.cache = ReplyCache(cache_path) if cache_path is not None else None
        if slots_dir is None and cache_path is not None:
            slots_dir = Path(cache_path).parent / "llm-slots"
        self.slots_dir = Path(slots_dir) if slots_dir is not None else None
        self.progress = progress
        self._embedded = None
        self._totals = dict.fromkeys(
            ("requests", "calls", "cache_hits", "failures", "call_failures", "retries", "prompt_tokens",
             "completion_tokens", "cached_tokens"), 0
        )
        self._seconds = {"seconds": 0.0, "wall_seconds": 0.0}
        self.slow_note: str | None = None  # why the embedded judge was slow and what to set (embedded.slow_note)
        self._startup_seconds = 0.0  # the embedded server's start-up, not counted as review time

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
        messages = review_messages(request, cfg["prompt"], fields, cfg["reasoning"], examples, cfg["domain"])
        schema = review_schema(fields, cfg["reasoning_max_chars"], cfg["reasoning_charset"])
        return self._request(messages, schema=schema, logprobs=cfg["confidence"] == "logprob")

    def review_many(self, requests: Sequence[ReviewRequest], examples: Sequence[Example] = ()) -> list[ReviewResult]:
        return asyncio.run(self.areview_many(requests, examples))

    async def areview_many(self, requests: Sequence[ReviewRequest], examples: Sequence[Example] = ()) -> list[ReviewResult]:
        bodies = [self.review_request(r, examples) for r in requests]
        replies = await self._run(bodies, desc="review", complete=_complete_review)
        return [self._review_result(reply) for reply in replies]

    def chat(self, messages: list[dict], max_tokens: int | None = None) -> str:
        """One free-text completion; raises LLMCallError when no usable reply came back."""
        reply = asyncio.run(self._run([self._request(messages, max_tokens=max_tokens)], desc=None, complete=_complete_chat))[0]
        if reply.get("failure") or not reply.get("content"):
            raise LLMCallError(f"{self.cfg['name'] or self.cfg['model']}: {reply.get('failure') or 'empty reply'}")
        return reply["content"]

    def chat_many(self, conversations: Sequence[list[dict]], max_tokens: int | None = None) -> list[str | None]:
        """Free-text completions; None marks a call that failed (counted in usage()['failures'])."""
        return asyncio.run(self.achat_many(conversations, max_tokens))

    async def achat_many(self, conversations: Sequence[list[dict]], max_tokens: int | None = None) -> list[str | None]:
        replies = await self._run([self._request(m, max_tokens=max_tokens) for m in conversations], desc="chat",
                                  complete=_complete_chat)
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

    def _replicas(self) -> Replicas:
        """The served replicas, or the embedded server (started here, this process's own)."""
        if self.cfg["base_url"]:
            return Replicas(endpoints(self.cfg), int(self.cfg["concurrency"]), self.slots_dir)
        if self._embedded is None:
            from hygrail.review.embedded import EmbeddedServer

            t0 = time.perf_counter()
            self._embedded = EmbeddedServer.from_config(self.cfg["embedded"]).start()
            self._startup_seconds += time.perf_counter() - t0
        return Replicas([self._embedded.base_url], int(self.cfg["concurrency"]), None)

    async def _run(self, bodies: list[dict], desc: str | None, complete) -> list[dict]:
        """Replies for `bodies` in order: from the cache, else from the server (identical
        requests are sent once). A reply dict has `failure` set when no reply came back; a reply
        is cached only when `complete(reply)` says it is a whole answer."""
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
        started = self._startup_seconds
        bar = tqdm(total=len(bodies), desc=f"LLM {desc} ({self.cfg['name'] or self.cfg['model']})",
                   unit=desc, disable=not (self.progress and desc), leave=False)
        bar.update(len(bodies) - sum(k in todo for k in keys))
        try:
            if todo:
                await self._send(todo, Counter(keys), replies, bar, complete)
        finally:
            bar.close()  # before any error line, so the line is not glued to the bar
        if todo and desc == "review" and self._embedded is not None:  # a served model's speed is its server's
            spent = time.perf_counter() - start - (self._startup_seconds - started)
            self._say_if_slow(spent / len(todo))
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

    def _say_if_slow(self, seconds: float) -> None:
        """Log why embedded reviews took ``seconds`` each and what to set, when that is slow
        (embedded.slow_note); kept in ``slow_note`` for a report page."""
        from hygrail.review.embedded import slow_note

        note = slow_note(seconds, self._embedded.threads, os.getloadavg()[0], os.cpu_count() or 1)
        if note is not None:
            self.slow_note = note
            log.warning("%s: %s", self.cfg["name"] or self.cfg["model"], note)

    async def _send(self, todo: dict[str, dict], copies: Counter, replies: dict[str, dict], bar, complete) -> None:
        """Send the uncached requests, at most `concurrency` per replica at once; replies land in
        `replies`, complete ones also in the cache."""
        replicas = self._replicas()
        clients = [
            openai.AsyncOpenAI(
                **_openai_kwargs(url, self.cfg),
                http_client=openai.DefaultAioHttpClient() if self.cfg["transport"] == "aiohttp" else None,
                timeout=float(self.cfg["timeout"]), max_retries=int(self.cfg["max_retries"]))
            for url in replicas.urls
        ]

        async def one(key: str, body: dict) -> None:
            slot = await replicas.acquire()
            try:
                reply = await self._call(clients[slot.replica], body)
            finally:
                replicas.release(slot)
            if self.cache is not None and not reply.get("failure") and complete(reply):
                retries = reply.pop("retries")
                try:
                    # First writer wins: a parallel job that sent the same request uses the same reply.
                    reply = {**self.cache.put(key, body, reply), "retries": retries}
                except OSError as e:  # disk full, permissions: keep the reply
                    log.warning("reply cache %s: %s; reply kept in memory only", self.cache.path, e)
                    reply["retries"] = retries
            replies[key] = reply
            bar.update(copies[key])

        try:
            # return_exceptions: a call that raises lets the others finish (and be cached) first.
            outcomes = await asyncio.gather(*(one(k, b) for k, b in todo.items()), return_exceptions=True)
        finally:
            for client in clients:
                await client.close()
            replicas.close()
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
            where = redact(", ".join(endpoints(self.cfg))) or "the embedded server"
            raise LLMCallError(
                f"llm {name} at {where}: {len(failures)} of {n_sent} calls got "
                f"no reply ({times} {kind}, e.g. {reason!r}), over llm.max_call_failure_rate={rate}; check that the server is up "
                f"and its URL/key; replies that came back are cached, a rerun sends only the rest")

    async def _call(self, client: openai.AsyncOpenAI, body: dict) -> dict:
        """One request until it gets a whole reply: the SDK retries connection errors, timeouts,
        429 and 5xx itself; a 200 that is not a completion or was cut off (finish reason neither
        `stop` nor `length`) is retried here with the SDK's backoff (0.5 s doubling, at most 8 s)."""
        retries_max = int(self.cfg["max_retries"])
        t0 = time.perf_counter()
        retries = 0
        for attempt in range(retries_max + 1):
            if attempt:
                await asyncio.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)) * (1 - 0.25 * random.random()))
            reply = await self._attempt(client, body)
            retries += reply.pop("retries")
            if not reply.pop("retry", False):
                break
            retries += attempt < retries_max
        return {**reply, "retries": retries, "latency": time.perf_counter() - t0}

    async def _attempt(self, client: openai.AsyncOpenAI, body: dict) -> dict:
        """One SDK call (with its own retries). `retry` marks a reply worth asking for again."""
        cfg = self.cfg
        retries_max = int(cfg["max_retries"])
        # httpx's timeout bounds each read, so a server trickling bytes could run forever: bound
        # the whole call by every attempt timing out plus the longest backoff between attempts.
        deadline = float(cfg["timeout"]) * (retries_max + 1) + 8.0 * retries_max
        self._totals["calls"] += 1
        retries = 0
        try:
            # client.post skips the SDK's typed-request transform (a third of its CPU per call);
            # timeout, retries and backoff still apply.
            response = await asyncio.wait_for(
                client.post("/chat/completions", cast_to=httpx2.Response, body=body), deadline)
            retries = int(response.request.headers.get("x-stainless-retry-count", 0))
            data = response.json()
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (openai.APITimeoutError, asyncio.TimeoutError) as e:
            return {"failure": _timeout_or_dropped(e), "retries": retries_max}
        except openai.APIConnectionError as e:
            return {"failure": f"connection error: {e.__cause__ or e}", "retries": retries_max}
        except openai.APIStatusError as e:
            retryable = e.status_code in (408, 409, 429) or e.status_code >= 500
            detail = f": {' '.join(e.message.split())[:200]}" if e.message else ""  # e.g. llama.cpp's context-size error
            return {"failure": f"HTTP {e.status_code}{detail}", "retries": retries_max if retryable else 0}
        except aiohttp.ClientError as e:  # e.g. a bad status line: outside the SDK's aiohttp error map
            detail = " ".join(str(e).split())[:300]
            return {"failure": f"bad response: {type(e).__name__}: {detail}", "retries": 0, "retry": True}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:  # not a completion
            return {"failure": f"bad response: {type(e).__name__}", "retries": retries, "retry": True}
        finish = choice.get("finish_reason")
        if finish not in ("stop", "length"):
            return {"failure": f"incomplete reply: finish_reason={finish!r}", "retries": retries, "retry": True,
                    "content": content, "finish_reason": finish}
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        logprobs = (choice.get("logprobs") or {}).get("content") or []
        return {
            "content": content,
            "finish_reason": finish,
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
            "cached_tokens": details.get("cached_tokens"),
            "logprobs": trim_logprobs(logprobs) if body.get("logprobs") else None,
            "retries": retries,
        }

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
        reasoning, cap = parsed.reasoning, self.cfg["reasoning_max_chars"]
        if cap and reasoning and len(reasoning) >= int(cap):  # the grammar stopped it, not the model
            reasoning = reasoning.rstrip() + "…"
        return ReviewResult(parsed.review, confidence, source, reasoning, failure=None,
                            salvaged=parsed.salvaged, **meta)
