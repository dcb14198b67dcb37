import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

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
    cache = ReplyCache(tmp_path / "llm.db")
    assert cache.put("k", {"model": "m"}, {"content": "first"}) == {"content": "first"}
    assert cache.put("k", {"model": "m"}, {"content": "second"}) == {"content": "first"}
    assert cache.get("k") == {"content": "first"} and len(cache) == 1


def test_put_get_roundtrip_and_persistence(tmp_path):
    path = tmp_path / "c" / "llm.db"
    cache = ReplyCache(path)
    assert cache.get("k") is None
    cache.put("k", {"model": "m"}, {"content": "ü", "latency": 1.5})
    cache.close()
    again = ReplyCache(path)
    assert again.get("k") == {"content": "ü", "latency": 1.5}
    assert len(again) == 1
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


_WRITER = textwrap.dedent(
    """
    import sys
    from hygrail.review.cache import ReplyCache, request_key
    cache = ReplyCache(sys.argv[1])
    tag = sys.argv[2]
    i = 0
    while True:
        req = {"model": tag, "i": i}
        cache.put(request_key(req), req, {"content": "x" * 20000, "i": i})
        i += 1
        if i == 20:
            print("ready", flush=True)
    """
)


def test_cache_survives_killed_writers(tmp_path):
    """Two processes write concurrently and are SIGKILLed mid-stream: every row left is whole."""
    path = tmp_path / "llm.db"
    ReplyCache(path).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        for tag in ("a", "b")
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        p.stdout.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = conn.execute("SELECT key, request, reply FROM replies").fetchall()
    tags = {json.loads(r)["model"] for _, r, _ in rows}
    assert tags == {"a", "b"} and len(rows) >= 40
    for key, request, reply in rows:
        req = json.loads(request)
        assert request_key(req) == key
        assert json.loads(reply) == {"content": "x" * 20000, "i": req["i"]}
    # each writer's rows are a gap-free prefix 0..n-1: nothing committed was lost or torn
    for tag in ("a", "b"):
        idx = sorted(json.loads(r)["i"] for _, r, _ in rows if json.loads(r)["model"] == tag)
        assert idx == list(range(len(idx)))
    # and the file keeps working
    cache = ReplyCache(path)
    cache.put("after", {"x": 1}, {"ok": True})
    assert cache.get("after") == {"ok": True}
