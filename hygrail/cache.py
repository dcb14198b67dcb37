"""Content-addressed on-disk cache for expensive stage outputs (trained GNN scores + checkpoint).

An entry is a folder ``root/<key>/`` that appears all at once: it is written into a temporary
sibling folder and renamed into place with ``os.replace``, so a reader sees either no entry or a
complete one, never a half-written one (a kill mid-write leaves only a ``.tmp-<key>-*`` folder,
which no reader looks at and the next writer of that key deletes). A per-key ``filelock`` makes
concurrent processes that want the same entry compute it once: the others wait, then read it.

A complete entry can still be damaged later (a full disk's truncated copy, a file edited by hand, a
pickle from another library version): whatever ``read`` raises on an entry counts as damage. The entry
is then renamed to ``<key>.damaged-<time>`` beside it (kept for a look, never deleted), named in one
warning, and computed again, as the reply cache (hygrail/review/cache.py) treats a damaged reply.

The LLM reply cache (one row per request) lives elsewhere; this one holds a few large files per key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Callable, Mapping, TypeVar

import numpy as np
from filelock import FileLock

log = logging.getLogger("hygrail.cache")
T = TypeVar("T")


def content_key(*parts: object) -> str:
    """SHA-256 (hex) over parts: numpy arrays (dtype, shape and bytes), strings, numbers and
    JSON-able mappings/sequences (keys sorted, so dict order does not change the key)."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            arr = np.ascontiguousarray(part)
            h.update(f"nd:{arr.dtype.str}:{arr.shape}:".encode())
            h.update(arr.tobytes())
        else:
            h.update(b"js:" + json.dumps(part, sort_keys=True, default=_plain).encode())
        h.update(b"\x00")  # separator: ("ab", "c") and ("a", "bc") must differ
    return h.hexdigest()


def _plain(obj: object) -> object:
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    raise TypeError(f"content_key: cannot hash {type(obj).__name__}; pass arrays, strings, numbers or mappings")


class DamagedFile(Exception):
    """A cache file that could not be read (``load``), naming the file and what was wrong."""

    def __init__(self, file: Path, cause: BaseException):
        super().__init__(f"{file} ({type(cause).__name__}: {cause})")
        self.file = file


def load(file: Path, how: Callable[[Path], T]) -> T:
    """``how(file)``; its failure raised as ``DamagedFile``, so a damaged entry's warning names the file."""
    try:
        return how(file)
    except Exception as e:
        raise DamagedFile(file, e) from e


class DiskCache:
    """Folders keyed by content hash under ``root``; see the module docstring for the guarantees."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key

    def get(self, key: str) -> Path | None:
        """The entry's folder if it exists (it is then complete), else None."""
        p = self.path(key)
        return p if p.is_dir() else None

    def get_or_create(self, key: str, write: Callable[[Path], None],
                      read: Callable[[Path], T] = lambda entry: entry) -> tuple[T, bool]:
        """(``read(entry folder)``, hit). On a miss ``write(tmp_dir)`` fills a temporary folder that
        then becomes the entry. Holds the key's lock while writing, so a second process waits for the
        first one's result instead of computing it again. An entry that ``read`` raises on is damaged:
        moved aside and written again (the module docstring); a fresh entry it raises on is a bug, raised."""
        if (p := self.get(key)) is not None:
            try:
                return read(p), True
            except Exception:
                pass  # damaged, or moved aside by another process meanwhile: looked at again under the lock
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.root / f".{key}.lock")):
            if (p := self.get(key)) is not None:  # another process wrote it while we waited
                try:
                    return read(p), True
                except Exception as e:
                    self._move_aside(p, e)
            # Leftovers of a writer killed mid-write: it held this lock, so nobody owns them now.
            for stale in self.root.glob(f".tmp-{key}-*"):
                shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=self.root))
            try:
                write(tmp)
                os.replace(tmp, self.path(key))
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            return read(self.path(key)), False

    def _move_aside(self, entry: Path, error: Exception) -> None:
        aside = entry.with_name(f"{entry.name}.damaged-{datetime.now():%Y%m%dT%H%M%S.%f}")
        os.replace(entry, aside)
        what = f"file {error}" if isinstance(error, DamagedFile) else f"entry {entry} ({type(error).__name__}: {error})"
        log.warning("damaged cache %s: moved aside to %s, computing it again", what, aside.name)
