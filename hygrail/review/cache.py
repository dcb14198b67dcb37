"""Persistent LLM reply cache: one JSON file per reply, keyed by a hash of the full request.

The key covers everything that shapes a reply (model, messages, decoding parameters, schema,
logprob options) and nothing about where or how it was sent (base URL, API key), so a re-served
model reuses its replies and no secret can reach the files.

Why files and not one SQLite database: on a cluster the cache sits on a shared network filesystem
(NFS, Lustre), where SQLite's WAL mode is unsafe (its index lives in shared memory that other
hosts do not see) and its rollback mode trusts POSIX locks that many NFS setups get wrong. A
directory of immutable files needs no locks at all; it is how git stores loose objects and ccache
its shared caches. Each entry ``root/ab/<key>.json`` is written whole to a temporary file and then
published with ``os.link``, which creates the name only if it does not exist yet, atomically, on
local disks and on NFS alike. So:
- a reader sees no entry or a complete one, never a torn one (a process killed mid-write leaves an
  unpublished ``.tmp-*`` file that no reader looks at);
- the first writer wins: a job that sent a request another job already answered gets the stored
  reply back from ``put``, so parallel jobs log the same reply;
- any number of processes on any number of hosts read and write one directory at once;
- a file damaged outside our control (not JSON) is set aside beside itself with one warning and is a
  miss, never a verdict (``hygrail.cache.read_file``); a full disk is a one-line error (``writing``).
Measured on the 2-core development box (local disk, 2,000 replies of ~3 KB, other jobs running):
0.09 ms per lookup, 0.5 ms per stored reply, against 1-20 s per reply from the model.

Replies cached by earlier versions in a single SQLite file (``cache/llm.sqlite``) are still read.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Mapping

from hygrail.cache import read_file, writing

_LEGACY_SUFFIXES = (".sqlite", ".db")


def request_key(request: Mapping, model_identity: str | None = None) -> str:
    """`model_identity`: what identifies the model beyond the request's `model` field, if anything
    (the embedded server's loaded file)."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if model_identity is not None:
        canonical += "\n" + model_identity
    return hashlib.sha256(canonical.encode()).hexdigest()


class ReplyCache:
    """Replies under the directory ``path``. A path ending in ``.sqlite`` or ``.db`` (the single
    file of earlier versions) names the directory without the suffix, and that file, if it exists,
    is read as well."""

    def __init__(self, path: Path | str):
        path = Path(path)
        self.path = path.with_suffix("") if path.suffix in _LEGACY_SUFFIXES else path
        self.path.mkdir(parents=True, exist_ok=True)
        self._legacy = None
        if path.is_file():  # read only (query_only), on the local disk where earlier versions kept it
            self._legacy = sqlite3.connect(path, timeout=60, check_same_thread=False)
            self._legacy.execute("PRAGMA query_only = 1")

    def _file(self, key: str) -> Path:
        if len(key) < 3 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"reply cache key {key!r}: expected a hex digest (request_key)")
        return self.path / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        file = self._file(key)
        if not file.exists():
            return self._legacy_get(key)
        # not JSON: a file damaged outside our control is set aside (one warning) and a miss, not a verdict
        entry = read_file(file, lambda f: dict(json.loads(f.read_bytes())))
        return entry["reply"] if entry is not None and entry.get("key") == key else None

    def put(self, key: str, request: Mapping, reply: Mapping) -> dict:
        """Store `reply` unless the key is already there; return the stored reply (the first
        writer's, when another process got there first)."""
        final = self._file(key)
        entry = {"key": key, "request": request, "reply": reply}
        tmp = final.parent / f".tmp-{uuid.uuid4().hex}"
        try:
            with writing(self.path, "an LLM reply"):
                final.parent.mkdir(exist_ok=True)
                tmp.write_text(json.dumps(entry, ensure_ascii=False, sort_keys=True), encoding="utf-8")
            os.link(tmp, final)  # fails if the name exists: the first writer wins
            return dict(reply)
        except FileExistsError:
            stored = self.get(key)
            if stored is None:  # a damaged entry: replace it with this reply
                os.replace(tmp, final)
                return dict(reply)
            return stored
        finally:
            tmp.unlink(missing_ok=True)

    def _legacy_get(self, key: str) -> dict | None:
        if self._legacy is None:
            return None
        row = self._legacy.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def __len__(self) -> int:
        return sum(1 for _ in self.path.glob("??/*.json"))

    def close(self) -> None:
        if self._legacy is not None:
            self._legacy.close()
            self._legacy = None
