"""Persistent LLM reply cache: SQLite in WAL mode, keyed by a hash of the full request.

The key covers everything that shapes a reply (model, messages, decoding parameters, schema,
logprob options) and nothing about where or how it was sent (base URL, API key), so a re-served
model reuses its replies and no secret can reach the file. Each reply is one autocommitted row:
a process killed mid-write leaves the previous state, never a torn row, and several processes
(parallel sweep jobs) can read and write one file at once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Mapping

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    reply TEXT NOT NULL,
    created TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
)
"""


def request_key(request: Mapping, model_identity: str | None = None) -> str:
    """`model_identity`: what identifies the model beyond the request's `model` field, if anything
    (the embedded server's loaded file)."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if model_identity is not None:
        canonical += "\n" + model_identity
    return hashlib.sha256(canonical.encode()).hexdigest()


class ReplyCache:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection per thread: sqlite3 connections must not cross threads.
        self._local = threading.local()
        self._conn().execute(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # Long busy timeout: writers from parallel jobs queue rather than fail.
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across process kills
            self._local.conn = conn
        return conn

    def get(self, key: str) -> dict | None:
        row = self._conn().execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, request: Mapping, reply: Mapping) -> dict:
        """Store `reply` unless the key is already there; return the stored reply. The first writer
        wins, so parallel jobs that both sent a request all use (and log) the same reply."""
        inserted = self._conn().execute(
            "INSERT OR IGNORE INTO replies (key, request, reply) VALUES (?, ?, ?)",
            (key, json.dumps(request, sort_keys=True, ensure_ascii=False), json.dumps(reply, ensure_ascii=False)),
        ).rowcount
        return dict(reply) if inserted else self.get(key)

    def __len__(self) -> int:
        return self._conn().execute("SELECT count(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
