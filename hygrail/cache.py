"""Content-addressed on-disk cache for expensive stage outputs, and the one path every cache file of
the package is read and written through: a damaged entry heals, nothing read runs code, and a failed
write says where and what.

An entry is a folder ``root/<key>/`` that appears all at once: it is written into a temporary
sibling folder and renamed into place with ``os.replace``, so a reader sees either no entry or a
complete one, never a half-written one (a kill mid-write leaves only a ``.tmp-<key>-*`` folder,
which no reader looks at and the next writer of that key deletes). A per-key ``filelock`` makes
concurrent processes that want the same entry compute it once: the others wait, then read it.

A complete entry can still be damaged later (a full disk's truncated copy, a file edited by hand, bits
flipped on a shared filesystem): each entry carries ``manifest.json``, every file's size and sha256 as
written, checked before the entry is read, since a changed byte in a safetensors file (no checksum)
reads without a word; hashlib's sha256 took 0.15 s for 100 MB of random bytes on the 2-core development
box at load 5.7 (2026-12-07), about what a read of the tuned reviewer's 91 MB weights adds. Whatever
``read`` raises on an entry counts as damage too. A damaged entry is renamed to ``<key>.damaged-<time>``
beside it (kept for a look, never deleted), named in one warning line, and computed again. Entries
written before manifests existed are judged by ``read`` alone. Files kept outside an entry folder (the
name vectors' shards, a training's resume state, an LLM reply) heal the same way, one file at a time
(``read_file``, ``write_file``).

What is read (README, the paragraph on what the caches read): only formats that hold data, so a cache
folder someone else can write cannot make this process run code: JSON, ``.npz`` through
``np.load(allow_pickle=False)``, parquet, safetensors, torch state dicts through
``torch.load(weights_only=True)``, and scikit-learn's trees as arrays (``hygrail.treeio``).
tests/test_cache.py checks the package's source for any other way in (pickle, ``weights_only=False``,
``allow_pickle=True``).

A write that fails for want of space or permission (``WRITE_ERRNOS``) raises ``CacheWriteError``, one
line naming the folder and what was being written; the partial folder or file is removed first, so
the same command, run again once there is room, goes on from there. Libraries that hide the
``OSError`` (polars' writer, safetensors' ``save_file``) are given bytes to write instead.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import tempfile
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Mapping, TypeVar

import numpy as np
from filelock import FileLock

from hygrail.kg import DataError

log = logging.getLogger("hygrail.cache")
T = TypeVar("T")
MANIFEST = "manifest.json"
# A write fails for want of room or permission: the user can act on these; any other error is a bug, raised as it is.
WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EPERM, errno.EROFS}


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


class CacheWriteError(DataError):
    """A cache write that failed for want of space or permission (module docstring): one line."""


def load(file: Path, how: Callable[[Path], T]) -> T:
    """``how(file)``; its failure raised as ``DamagedFile``, so a damaged entry's warning names the file."""
    try:
        return how(file)
    except Exception as e:
        raise DamagedFile(file, e) from e


def set_aside(path: Path, why: str) -> Path:
    """Rename a damaged cache file or entry to ``<name>.damaged-<time>`` beside it and say so in one
    warning line (``why``: what was wrong, naming the file); the new path."""
    aside = path.with_name(f"{path.name}.damaged-{datetime.now():%Y%m%dT%H%M%S.%f}")
    os.replace(path, aside)
    log.warning("damaged cache %s: moved aside to %s, computing it again", why, aside.name)
    return aside


def read_file(file: Path, how: Callable[[Path], T]) -> T | None:
    """``how(file)`` for a cache file kept outside an entry folder; None when it is absent or does not
    load (then set aside, one warning: the caller computes it again)."""
    try:
        return how(file)
    except FileNotFoundError:
        return None  # absent, or set aside by another process meanwhile
    except Exception as e:
        try:
            set_aside(file, f"file {file} ({type(e).__name__}: {e})")
        except FileNotFoundError:
            pass  # another process set it aside first
        return None


def _write_failure(e: BaseException) -> OSError | None:
    """The out-of-space or permission ``OSError`` behind ``e`` (itself, or its cause or context, as
    torch's writer wraps it), if any."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in WRITE_ERRNOS:
            return e
        e = e.__cause__ or e.__context__
    return None


@contextmanager
def writing(folder: Path, what: str, setting: str = "paths.cache") -> Iterator[None]:
    """Turns a write's failure for want of space or permission into ``CacheWriteError`` naming
    ``folder`` and ``what``; other errors pass as they are. A failure on a named file outside
    ``folder`` (an input being read, say) is not the cache's and passes too."""
    try:
        yield
    except Exception as e:
        cause = _write_failure(e)
        if cause is None or (cause.filename and not Path(os.path.abspath(cause.filename)).is_relative_to(
                os.path.abspath(folder))):
            raise
        raise CacheWriteError(
            f"cannot write {what} into {folder}: {cause.strerror or os.strerror(cause.errno)} "
            f"({errno.errorcode.get(cause.errno, cause.errno)}); nothing half-written was kept: free space there or "
            f"make it writable (or point {setting} elsewhere), then run the same command again") from None


def write_file(file: Path, write: Callable[[BinaryIO], None], what: str, setting: str = "paths.cache") -> None:
    """``write(f)`` into a temporary sibling of ``file``, renamed into place: a reader sees the old
    file or the new one, and a failed write leaves neither a partial file nor a temporary one."""
    file = Path(file)
    with writing(file.parent, what, setting):
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.replace(tmp, file)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _sha256(file: Path) -> str:
    with open(file, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _write_manifest(entry: Path) -> None:
    files = sorted(p for p in entry.rglob("*") if p.is_file())
    manifest = {p.relative_to(entry).as_posix(): [p.stat().st_size, _sha256(p)] for p in files}
    (entry / MANIFEST).write_text(json.dumps(manifest, indent=0))


def check(entry: Path) -> None:
    """Raise ``DamagedFile`` unless every file of ``entry``'s manifest has its written size and sha256
    (an entry without a manifest, written before they existed, passes: ``read`` alone judges it)."""
    file = entry / MANIFEST
    if not file.exists():
        return
    manifest = load(file, lambda f: {str(k): (int(v[0]), str(v[1])) for k, v in json.loads(f.read_text()).items()})
    for name, (size, digest) in manifest.items():
        path = entry / name
        if not path.is_file():
            raise DamagedFile(path, FileNotFoundError("listed in the manifest, missing"))
        if (got := path.stat().st_size) != size:
            raise DamagedFile(path, ValueError(f"{got} bytes where {size} were written"))
        if _sha256(path) != digest:
            raise DamagedFile(path, ValueError("content differs from what was written (sha256)"))


class DiskCache:
    """Folders keyed by content hash under ``root``; see the module docstring for the guarantees."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key

    def get(self, key: str) -> Path | None:
        """The entry's folder if it exists and matches its manifest, else None (a damaged entry is set
        aside: one warning)."""
        entry = self.path(key)
        if not entry.is_dir():
            return None
        try:
            check(entry)
            return entry
        except DamagedFile:
            pass  # moved aside under the lock (another process may be doing it)
        with writing(self.root, "a damaged entry's new name"), self._lock(key):
            found = self._read_locked(key, lambda e: e)
        return None if found is None else found[0]

    def get_or_create(self, key: str, write: Callable[[Path], None],
                      read: Callable[[Path], T] = lambda entry: entry, what: str = "a cache entry") -> tuple[T, bool]:
        """(``read(entry folder)``, hit). On a miss ``write(tmp_dir)`` fills a temporary folder that
        then becomes the entry. Holds the key's lock while writing, so a second process waits for the
        first one's result instead of computing it again. An entry that fails its manifest or that
        ``read`` raises on is damaged: moved aside and written again (the module docstring); a fresh
        entry ``read`` raises on is a bug, raised. ``what``: the entry's contents, for a failed write's
        message (``CacheWriteError``)."""
        if (entry := self.path(key)).is_dir():
            try:
                check(entry)
                return read(entry), True
            except Exception:
                pass  # damaged, or moved aside by another process meanwhile: looked at again under the lock
        with writing(self.root, what), self._lock(key):
            if (found := self._read_locked(key, read)) is not None:  # another process wrote it while we waited
                return found[0], True
            # Leftovers of a writer killed mid-write: it held this lock, so nobody owns them now.
            for stale in self.root.glob(f".tmp-{key}-*"):
                shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=self.root))
            try:
                write(tmp)
                _write_manifest(tmp)
                os.replace(tmp, self.path(key))
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return read(self.path(key)), False

    def _read_locked(self, key: str, read: Callable[[Path], T]) -> tuple[T] | None:
        """(``read(entry)``,) of a sound entry, under the key's lock; None when there is none, a
        damaged one being moved aside first."""
        entry = self.path(key)
        if not entry.is_dir():
            return None
        try:
            check(entry)
            return (read(entry),)
        except Exception as e:
            what = f"file {e}" if isinstance(e, DamagedFile) else f"entry {entry} ({type(e).__name__}: {e})"
            set_aside(entry, what)
            return None

    def _lock(self, key: str) -> FileLock:
        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root / f".{key}.lock"))
