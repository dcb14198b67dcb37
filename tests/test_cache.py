"""Content-hash keys and atomic, process-safe cache entries that heal when damaged (hygrail/cache.py):
a hit computes nothing, a crash mid-write leaves no entry, a damaged entry or file is set aside with
one warning and computed again, a write that fails for want of room or permission is one line, and
nothing the package reads from a cache can run code."""

import errno
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
    assert str(tmp_path / "k" / "n.json") in line and "7 bytes where 9 were written" in line and aside.name in line
    assert (aside / "n.json").read_text() == '{"n": 4' and len(calls) == 2
    assert cache.get_or_create("k", write, read) == (42, True) and len(calls) == 2
    # an entry from before manifests: read alone judges it, and its error names the file
    caplog.clear()
    (tmp_path / "k" / "manifest.json").unlink()
    (tmp_path / "k" / "n.json").write_text('{"n": 4')
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        assert cache.get_or_create("k", write, read) == (42, False)
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(tmp_path / "k" / "n.json") in line and "JSONDecodeError" in line


def test_a_changed_byte_is_damage_and_get_sets_the_entry_aside(tmp_path, caplog):
    """The manifest's sha256 catches what no reader would (a byte changed, same size), and ``get``
    (discovery's first answer asks it whether the GNN is cached) sets such an entry aside with one
    warning and answers None, so the caller computes it again."""
    cache = DiskCache(tmp_path)
    cache.get_or_create("k", lambda d: (d / "v.bin").write_bytes(b"\x00" * 64))
    assert cache.get("k") == tmp_path / "k"
    (tmp_path / "k" / "v.bin").write_bytes(b"\x00" * 63 + b"\x01")
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        assert cache.get("k") is None
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(tmp_path / "k" / "v.bin") in line and "sha256" in line
    assert not (tmp_path / "k").exists() and len(list(tmp_path.glob("k.damaged-*"))) == 1
    assert cache.get("nothing") is None


def test_a_damaged_single_file_is_set_aside_once_and_read_as_missing(tmp_path, caplog):
    """``read_file`` (name-vector shards, resume states, LLM replies): absent is None without a word;
    a file that does not load is None, set aside beside itself and named in one warning line."""
    from hygrail.cache import read_file

    f = tmp_path / "shard.npz"
    assert read_file(f, np.load) is None
    np.savez(f, a=np.arange(1000))
    f.write_bytes(f.read_bytes()[:100])
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        assert read_file(f, lambda p: np.load(p, allow_pickle=False)["a"]) is None
    (line,) = [r.getMessage() for r in caplog.records]
    (aside,) = tmp_path.glob("shard.npz.damaged-*")
    assert str(f) in line and aside.name in line and not f.exists() and len(aside.read_bytes()) == 100


# -- writes that fail --------------------------------------------------------------------------------------
def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_is_one_line_naming_the_folder_and_what_and_the_rerun_goes_on(tmp_path):
    """A write that fails for want of room: ``CacheWriteError`` (a DataError: one line, no traceback
    at the command line) naming the folder and what was written; nothing is left, neither entry nor
    temporary folder; once there is room the same call computes and keeps the entry."""
    from hygrail.cache import CacheWriteError
    from hygrail.kg import DataError

    cache = DiskCache(tmp_path / "c")

    def write(d: Path):
        (d / "a.txt").write_text("first file")
        _full_disk()

    with pytest.raises(CacheWriteError) as e:
        cache.get_or_create("k", write, what="the parsed recipe table")
    assert isinstance(e.value, DataError) and "\n" not in str(e.value)
    assert str(e.value).startswith(f"cannot write the parsed recipe table into {tmp_path / 'c'}: No space left on device "
                                   f"(ENOSPC); nothing half-written was kept")
    assert [p.name for p in (tmp_path / "c").iterdir() if not p.name.endswith(".lock")] == []
    assert cache.get_or_create("k", lambda d: (d / "a.txt").write_text("ok"))[1] is False
    assert (tmp_path / "c" / "k" / "a.txt").read_text() == "ok"


def test_a_wrapped_write_error_and_a_missing_permission_are_named_too(tmp_path, monkeypatch):
    """torch's writer wraps the OSError (its context); no permission to make the folder is the same
    kind of failure; an error of something else (an input that is not there) passes as it is."""
    from hygrail.cache import CacheWriteError, write_file

    def torch_like(d: Path):
        try:
            _full_disk()
        except OSError:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534")

    with pytest.raises(CacheWriteError, match="cannot write the GNN into .*: No space left on device"):
        DiskCache(tmp_path / "a").get_or_create("k", torch_like, what="the GNN")

    def no_permission(self, *a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", no_permission)
    with pytest.raises(CacheWriteError, match=r"cannot write name vectors into .*/b: Permission denied \(EACCES\)"):
        write_file(tmp_path / "b" / "x.npz", lambda f: f.write(b"1"), "name vectors")
    monkeypatch.undo()

    def missing_input(d: Path):
        open(tmp_path / "no such input.json")

    with pytest.raises(FileNotFoundError):
        DiskCache(tmp_path / "c").get_or_create("k", missing_input)
    outside = tmp_path / "elsewhere.csv"

    def unreadable_input(d: Path):
        raise PermissionError(errno.EACCES, "Permission denied", str(outside))

    with pytest.raises(PermissionError):
        DiskCache(tmp_path / "c").get_or_create("k", unreadable_input)


def test_a_failed_file_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    from hygrail.cache import CacheWriteError, write_file

    f = tmp_path / "state.pt"
    write_file(f, lambda out: out.write(b"old"), "a state")

    def half(out):
        out.write(b"ne")
        _full_disk()

    with pytest.raises(CacheWriteError, match=f"cannot write a state into {tmp_path}"):
        write_file(f, half, "a state")
    assert f.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["state.pt"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_cache_folder_is_one_line(tmp_path):
    from hygrail.cache import CacheWriteError

    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o555)
    try:
        with pytest.raises(CacheWriteError, match=f"cannot write x into {tmp_path / 'ro'}: Permission denied"):
            DiskCache(tmp_path / "ro").get_or_create("k", lambda d: None, what="x")
    finally:
        (tmp_path / "ro").chmod(0o755)


# -- nothing read runs code -------------------------------------------------------------------------------
def _calls(tree):
    """(dotted name of the called function, the call node) of every call in ``tree``."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield ast.unparse(node.func), node


def test_no_cache_path_can_run_code_when_read():
    """README's trust paragraph, checked on the source: no module of the package imports pickle or a
    pickle-based loader, every ``torch.load`` (direct or through ``partial``) and Lightning resume says
    ``weights_only=True``, and no ``np.load`` allows pickles."""
    import ast

    bad = []
    for path in sorted((ROOT / "hygrail").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for n in names:
                if n.split(".")[0] in {"pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}:
                    bad.append(f"{where}:{node.lineno}: imports {n}")
        for func, call in _calls(tree):
            kw = {k.arg: k.value for k in call.keywords}
            flag = lambda name: isinstance(kw.get(name), ast.Constant) and kw[name].value is True  # noqa: E731
            loads_torch = func == "torch.load" or (func == "partial" and call.args and ast.unparse(call.args[0]) == "torch.load")
            if loads_torch and not flag("weights_only"):
                bad.append(f"{where}:{call.lineno}: torch.load without weights_only=True")
            if func.endswith("trainer.fit") and "ckpt_path" in kw and not flag("weights_only"):
                bad.append(f"{where}:{call.lineno}: a Lightning resume without weights_only=True")
            if func in ("np.load", "numpy.load") and "allow_pickle" in kw and not (
                    isinstance(kw["allow_pickle"], ast.Constant) and kw["allow_pickle"].value is False):
                bad.append(f"{where}:{call.lineno}: np.load allowing pickles")
            if func.endswith(("read_pickle", "pickle.load", "pickle.loads")):
                bad.append(f"{where}:{call.lineno}: {func}")
    assert not bad, "\n".join(bad)


def test_an_entry_that_fails_to_read_once_written_is_a_bug_not_damage(tmp_path):
    def read(entry: Path):
        raise ValueError("read does not match write")

    with pytest.raises(ValueError, match="read does not match write"):
        DiskCache(tmp_path).get_or_create("k", lambda d: None, read)
    assert not list(tmp_path.glob("k.damaged-*"))
