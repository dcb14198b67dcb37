"""Content-hash keys and atomic, process-safe cache entries that heal when damaged (hygrail/cache.py), and the triage
score cache on top of them: a hit trains nothing, a changed hyperparameter misses, a crash
mid-write leaves no entry."""

import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hygrail.cache import DiskCache, content_key

ROOT = Path(__file__).resolve().parents[1]


def test_content_key_depends_on_content_not_dict_order():
    a = content_key({"hidden": 64, "name": "hgt"}, np.arange(3), 42)
    assert a == content_key({"name": "hgt", "hidden": 64}, np.arange(3), 42)
    assert a != content_key({"name": "hgt", "hidden": 32}, np.arange(3), 42)
    assert a != content_key({"name": "hgt", "hidden": 64}, np.arange(3, dtype=np.int32), 42)  # dtype counts
    assert a != content_key({"name": "hgt", "hidden": 64}, np.arange(3), 43)
    assert content_key("ab", "c") != content_key("a", "bc")


def test_get_or_create_writes_once(tmp_path):
    cache, calls = DiskCache(tmp_path), []

    def write(d: Path):
        calls.append(d)
        (d / "x.txt").write_text("42")

    p1, hit1 = cache.get_or_create("k", write)
    p2, hit2 = cache.get_or_create("k", write)
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    assert p1 == p2 == tmp_path / "k" and (p2 / "x.txt").read_text() == "42"


def test_failed_write_leaves_nothing(tmp_path):
    cache = DiskCache(tmp_path)

    def write(d: Path):
        (d / "half.txt").write_text("...")
        raise KeyboardInterrupt  # a Ctrl-C between two files

    with pytest.raises(KeyboardInterrupt):
        cache.get_or_create("k", write)
    assert cache.get("k") is None
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


_KILLED_WRITER = """
import os, sys
from pathlib import Path
from hygrail.cache import DiskCache
def write(d):
    (d / "half.txt").write_text("...")
    os._exit(9)  # killed mid-write: no cleanup code runs
DiskCache(Path(sys.argv[1])).get_or_create("k", write)
"""


def test_killed_writer_leaves_no_entry_and_next_writer_cleans_up(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path)], cwd=ROOT)
    assert proc.returncode == 9
    cache = DiskCache(tmp_path)
    assert cache.get("k") is None
    assert len(list(tmp_path.glob(".tmp-k-*"))) == 1  # the orphan, invisible to readers
    _, hit = cache.get_or_create("k", lambda d: (d / "ok.txt").write_text("1"))
    assert not hit and (tmp_path / "k" / "ok.txt").exists()
    assert list(tmp_path.glob(".tmp-k-*")) == []


def _slow_writer(root: str, log: str) -> bool:
    def write(d: Path):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.5)
        (d / "v").write_text("1")

    return DiskCache(Path(root)).get_or_create("k", write)[1]


def test_concurrent_processes_compute_once(tmp_path):
    log = tmp_path / "writes.log"
    with mp.get_context("spawn").Pool(3) as pool:
        hits = pool.starmap(_slow_writer, [(str(tmp_path / "c"), str(log))] * 3)
    assert len(log.read_text().split()) == 1
    assert sorted(hits) == [False, True, True]


def test_a_damaged_entry_is_moved_aside_and_written_again(tmp_path, caplog):
    """Whatever ``read`` raises on marks the entry damaged: one warning naming the file, the entry
    renamed beside it (kept), the value computed again; a healthy entry is read, not rewritten."""
    from hygrail.cache import load

    cache, calls = DiskCache(tmp_path), []

    def write(d: Path):
        calls.append(d)
        (d / "n.json").write_text('{"n": 42}')

    def read(entry: Path) -> int:
        return load(entry / "n.json", lambda f: json.loads(f.read_text())["n"])

    assert cache.get_or_create("k", write, read) == (42, False)
    (tmp_path / "k" / "n.json").write_text('{"n": 4')  # truncated
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        assert cache.get_or_create("k", write, read) == (42, False)
    (line,) = [r.getMessage() for r in caplog.records]
    (aside,) = tmp_path.glob("k.damaged-*")
    assert str(tmp_path / "k" / "n.json") in line and "JSONDecodeError" in line and aside.name in line
    assert (aside / "n.json").read_text() == '{"n": 4' and len(calls) == 2
    assert cache.get_or_create("k", write, read) == (42, True) and len(calls) == 2


def test_an_entry_that_fails_to_read_once_written_is_a_bug_not_damage(tmp_path):
    def read(entry: Path):
        raise ValueError("read does not match write")

    with pytest.raises(ValueError, match="read does not match write"):
        DiskCache(tmp_path).get_or_create("k", lambda d: None, read)
    assert not list(tmp_path.glob("k.damaged-*"))
