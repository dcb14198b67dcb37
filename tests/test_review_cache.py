import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hygrail.review.cache import ReplyCache, request_key

ROOT = Path(__file__).resolve().parents[1]


def test_key_covers_the_whole_request_and_ignores_key_order():
    a = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.2}
    assert request_key(a) == request_key(dict(reversed(list(a.items()))))
    for change in ({"temperature": 0.3}, {"model": "n"}, {"messages": [{"role": "user", "content": "y"}]},
                   {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}):
        assert request_key({**a, **change}) != request_key(a)


def test_model_identity_is_part_of_the_key():
    a = {"model": "embedded-label", "messages": []}
    assert request_key(a, "file-a.gguf") != request_key(a, "file-b.gguf") != request_key(a)


def test_first_writer_wins(tmp_path):
    """Two jobs that both sent a request must log the same reply: the one stored first."""
    cache = ReplyCache(tmp_path / "llm")
    k = request_key({"model": "m"})
    assert cache.put(k, {"model": "m"}, {"content": "first"}) == {"content": "first"}
    assert cache.put(k, {"model": "m"}, {"content": "second"}) == {"content": "first"}
    assert cache.get(k) == {"content": "first"} and len(cache) == 1
    with pytest.raises(ValueError, match="hex digest"):
        cache.get("../../etc/passwd")


def test_put_get_roundtrip_persistence_and_no_database(tmp_path, caplog):
    cache = ReplyCache(tmp_path / "c" / "llm")
    k = request_key({"model": "m", "messages": []})
    assert cache.get(k) is None
    cache.put(k, {"model": "m"}, {"content": "ü", "latency": 1.5})
    cache.close()
    again = ReplyCache(tmp_path / "c" / "llm")
    assert again.get(k) == {"content": "ü", "latency": 1.5}
    assert len(again) == 1
    # nothing that needs locks or shared memory: no SQLite file, no WAL, no lock file
    names = [p.name for p in (tmp_path / "c").rglob("*") if p.is_file()]
    assert names == [f"{k}.json"]
    # a damaged entry is a miss (never a verdict), set aside with one warning; the next reply replaces it
    file = tmp_path / "c" / "llm" / k[:2] / f"{k}.json"
    file.write_text('{"key": "')
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        assert again.get(k) is None
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(file) in line and "moved aside" in line and len(list(file.parent.glob(f"{k}.json.damaged-*"))) == 1
    assert again.put(k, {"model": "m"}, {"content": "new"}) == {"content": "new"} == again.get(k)


def test_a_full_disk_while_a_reply_is_stored_is_one_line(tmp_path, monkeypatch):
    import errno

    from hygrail.cache import CacheWriteError

    cache = ReplyCache(tmp_path / "llm")

    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(CacheWriteError, match=f"cannot write an LLM reply into {tmp_path / 'llm'}: No space left"):
        cache.put(request_key({"model": "m"}), {"model": "m"}, {"content": "x"})
    assert not [p for p in (tmp_path / "llm").rglob("*") if p.is_file()]


def test_replies_of_the_single_sqlite_file_are_still_read(tmp_path):
    """Earlier versions kept one SQLite file (cache/llm.sqlite, WAL): its replies are not lost."""
    old = tmp_path / "llm.sqlite"
    conn = sqlite3.connect(old)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE replies (key TEXT PRIMARY KEY, request TEXT NOT NULL, reply TEXT NOT NULL)")
    k = request_key({"model": "m", "old": True})
    conn.execute("INSERT INTO replies VALUES (?, ?, ?)", (k, "{}", json.dumps({"content": "kept"})))
    conn.commit()
    conn.close()
    cache = ReplyCache(old)
    assert cache.path == tmp_path / "llm" and cache.get(k) == {"content": "kept"}
    new = request_key({"model": "m"})
    cache.put(new, {"model": "m"}, {"content": "fresh"})
    assert (tmp_path / "llm" / new[:2] / f"{new}.json").is_file() and cache.get(new) == {"content": "fresh"}


_WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from hygrail.review.cache import ReplyCache, request_key
    cache = ReplyCache(sys.argv[1])
    tag, n = sys.argv[2], int(sys.argv[3])
    print("started", flush=True)
    while not os.path.exists(sys.argv[1] + ".go"):  # start together
        time.sleep(0.001)
    got, t0 = {}, time.time()
    i = 0
    while n < 0 or i < n:
        req = {"model": "shared" if i % 2 else tag, "i": i}  # odd requests: both processes send them
        got[request_key(req)] = cache.put(request_key(req), req, {"content": "x" * 20000, "by": tag, "i": i})
        i += 1
        if i == 20:
            print("ready", flush=True)
    print(json.dumps({"got": got, "span": [t0, time.time()]}), flush=True)
    """
)


def _writers(path, n):
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, str(n)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for tag in ("a", "b")]
    for p in procs:  # both imported and waiting (a fixed sleep let a slow start under load begin after the other ended)
        assert p.stdout.readline().strip() == "started"
    Path(f"{path}.go").touch()
    return procs


def test_two_processes_share_one_directory_without_loss_or_duplicates(tmp_path):
    """Both write at once, half of their requests the same: every reply is stored exactly once, and
    for a request both sent, both got the first writer's reply back."""
    path = tmp_path / "llm"
    procs = _writers(path, 400)
    got, spans = [], []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        result = json.loads(out.splitlines()[-1])
        got.append(result["got"])
        spans.append(result["span"])
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]  # they really wrote at the same time
    cache = ReplyCache(path)
    keys = set(got[0]) | set(got[1])
    assert len(keys) == 600 == len(cache)  # 200 own per process + 200 shared
    assert len(list(path.rglob("*.json"))) == 600 and not list(path.rglob(".tmp-*"))
    shared = set(got[0]) & set(got[1])
    assert len(shared) == 200
    for k in shared:
        assert got[0][k] == got[1][k] == cache.get(k)


def test_cache_survives_killed_writers(tmp_path):
    """Two processes write concurrently and are SIGKILLed mid-stream: every entry left is whole."""
    path = tmp_path / "llm"
    procs = _writers(path, -1)
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        p.stdout.close()
    entries = [json.loads(f.read_text()) for f in path.glob("??/*.json")]
    assert len(entries) >= 40
    for e in entries:
        assert request_key(e["request"]) == e["key"]
        assert e["reply"]["content"] == "x" * 20000 and e["reply"]["i"] == e["request"]["i"]
    # each writer's own requests are a gap-free prefix of its even numbers: nothing published was lost
    for tag in ("a", "b"):
        idx = sorted(e["request"]["i"] for e in entries if e["request"]["model"] == tag)
        assert idx == list(range(0, 2 * len(idx), 2))
    # and the directory keeps working
    cache = ReplyCache(path)
    k = request_key({"x": 1})
    cache.put(k, {"x": 1}, {"ok": True})
    assert cache.get(k) == {"ok": True}
