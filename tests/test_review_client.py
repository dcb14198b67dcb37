import json
import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from scripted_server import BadHTTP, Cut, Drop, Garbage, Reply, ScriptedServer, Status, ok_review, scripted_server  # noqa: F401

from hygrail.review.client import LLMCallError, ReviewClient, llm_settings
from hygrail.review.contract import ReviewRequest

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf" / "llm"


def _cfg(server, **over):
    # max_call_failure_rate=1: these tests record per-call failures; the batch check has its own tests.
    return {"name": "scripted", "model": "scripted-model", "base_url": server.base_url, "timeout": 1.0,
            "max_retries": 1, "concurrency": 8, "max_tokens": 256, "max_call_failure_rate": 1.0, **over}


CASES = {
    # marker: (behaviours, expected review, expected confidence, failure substring, retries)
    "case:ok": ([Reply(ok_review("yes", 0.8))], "yes", 0.8, None, 0),
    "case:fenced": ([Reply("```json\n" + ok_review("no", 30) + "\n```")], "no", 0.3, None, 0),
    "case:trailing": ([Reply(ok_review("yes", 0.65) + "\nLet me know if you need more.")], "yes", 0.65, None, 0),
    "case:malformed": ([Reply('{"reasoning": "x", review: yes, confidence: 0.9')], None, None, "unparseable", 0),
    "case:truncated": ([Reply('{"reasoning": "Because the materi', finish_reason="length")], None, None,
                       "cut off at max_tokens", 0),
    "case:salvage": ([Reply('{"review": "yes", "confidence": 0.7, "reasoning": "Becau', finish_reason="length")],
                     "yes", 0.7, None, 0),
    "case:500-then-ok": ([Status(500), Reply(ok_review("no", 0.1))], "no", 0.1, None, 1),
    "case:429-then-ok": ([Status(429), Reply(ok_review("yes", 0.9))], "yes", 0.9, None, 1),
    "case:500-always": ([Status(503)], None, None, "HTTP 503", 1),
    "case:400": ([Status(400)], None, None, "HTTP 400", 0),
    "case:drop-then-ok": ([Drop(), Reply(ok_review("yes", 0.55))], "yes", 0.55, None, 1),
    "case:drop-always": ([Drop()], None, None, "connection error", 1),
    "case:cut": ([Cut()], None, None, "connection error", 1),
    "case:garbage": ([Garbage()], None, None, "bad response", 1),  # retried: a proxy's error page is no answer
    "case:html-then-ok": ([Garbage(), Reply(ok_review("no", 0.2))], "no", 0.2, None, 1),
    "case:abort": ([Reply('{"reasoning": "Because', finish_reason="abort")], None, None, "incomplete reply", 1),
    "case:unfinished-then-ok": ([Reply("", finish_reason=None), Reply(ok_review("yes", 0.75))], "yes", 0.75, None, 1),
    "case:slow": ([Reply(ok_review("yes", 0.6), delay=0.5)], "yes", 0.6, None, 0),
    "case:hang": ([Reply(delay=30)], None, None, "timeout", 1),
    "case:no-confidence": ([Reply('{"reasoning": "r", "review": "yes"}')], None, None, "no readable confidence", 0),
}


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_every_scripted_case_ends_parsed_or_recorded(scripted_server, tmp_path, transport):
    for marker, (behaviours, *_) in CASES.items():
        scripted_server.script(marker, *behaviours)
    client = ReviewClient(_cfg(scripted_server, transport=transport), tmp_path / "llm.db", progress=False)
    start = time.perf_counter()
    results = client.review_many([ReviewRequest(m, "some evidence") for m in CASES])
    elapsed = time.perf_counter() - start
    # the hang case bounds the batch: 2 attempts x 1 s timeout + <= 0.5 s backoff, run concurrently
    assert elapsed < 5.0
    for (marker, (_, review, conf, failure, retries)), r in zip(CASES.items(), results):
        assert r.review == review, marker
        assert r.retries == retries, marker
        if failure is None:
            assert r.ok and r.confidence == pytest.approx(conf) and r.confidence_source == "stated", marker
        else:
            assert not r.ok and failure in r.failure and r.confidence is None, marker
    by = dict(zip(CASES, results))
    assert by["case:malformed"].raw.startswith('{"reasoning": "x"')  # raw text kept for the audit
    assert by["case:salvage"].salvaged and by["case:salvage"].reasoning == "Becau"
    usage = client.usage()
    n_fail = sum(1 for *_, f, _ in CASES.values() if f is not None)
    assert usage["failures"] == n_fail == sum(not r.ok for r in results)
    assert usage["requests"] == len(CASES) and usage["cache_hits"] == 0
    assert usage["retries"] == sum(r.retries for r in results)


def test_repeat_is_served_from_cache_with_zero_calls(scripted_server, tmp_path):
    scripted_server.script("case:flaky", Status(500), Status(500), Reply(ok_review("yes", 0.7)))
    requests = [ReviewRequest(f"H{i}", None) for i in range(5)] + [ReviewRequest("case:flaky", None)]
    cfg = _cfg(scripted_server, max_retries=0)
    first = ReviewClient(cfg, tmp_path / "llm.db", progress=False).review_many(requests)
    assert scripted_server.count == 6 and not first[-1].ok  # 500 with no retries left: not cached
    second_client = ReviewClient(cfg, tmp_path / "llm.db", progress=False)
    second = second_client.review_many(requests)
    assert scripted_server.count == 7  # only the failed one was sent again (and hit the 2nd 500)
    assert [r.cache_hit for r in second] == [True] * 5 + [False]
    assert [r.review for r in second[:5]] == [r.review for r in first[:5]]
    assert second[0].latency == first[0].latency  # original server time kept for cost accounting
    u = second_client.usage()
    assert (u["calls"], u["cache_hits"], u["failures"]) == (1, 5, 1)
    assert u["prompt_tokens"] == sum(r.prompt_tokens for r in second) > 0


def test_identical_requests_in_one_batch_are_sent_once(scripted_server, tmp_path):
    scripted_server.script("case:flaky", Status(500), Reply(ok_review("yes", 0.6)))
    client = ReviewClient(_cfg(scripted_server), None, progress=False)
    results = client.review_many([ReviewRequest("same", "e")] * 4 + [ReviewRequest("case:flaky", "e")] * 3)
    assert scripted_server.count == 1 + 2 and all(r.ok for r in results)
    assert client.usage()["retries"] == 1  # one request, retried once, however many copies asked for it


def test_an_unreachable_server_fails_the_batch_in_one_line(closed_url):
    url = closed_url
    # the refusal comes at once; a short timeout on a loaded machine turned it into "timeout" (2 workers, load 10)
    cfg = {"name": "down", "model": "m", "base_url": url, "timeout": 10.0, "max_retries": 0}  # default threshold
    with pytest.raises(LLMCallError, match=rf"llm down at {url}: 3 of 3 calls got no reply \(3 connection error") as e:
        ReviewClient(cfg, None, progress=False).review_many([ReviewRequest(f"h{i}") for i in range(3)])
    assert "\n" not in str(e.value)


def test_failure_rate_threshold_keeps_the_replies_that_came_back(scripted_server, tmp_path, caplog):
    scripted_server.script("case:down", Status(503))
    cfg = _cfg(scripted_server, max_retries=0, max_call_failure_rate=0.25)
    db = tmp_path / "llm.db"
    results = ReviewClient(cfg, db, progress=False).review_many(
        [ReviewRequest(f"h{i}") for i in range(9)] + [ReviewRequest("case:down")])
    assert [r.ok for r in results] == [True] * 9 + [False]  # 10%: recorded, falls back, warned
    assert "1 of 10 calls got no reply (1 HTTP 503" in caplog.text
    batch = [ReviewRequest(f"g{i}") for i in range(3)] + [ReviewRequest(f"case:down {i}") for i in range(3)]
    with pytest.raises(LLMCallError, match="3 of 6 calls got no reply"):
        ReviewClient(cfg, db, progress=False).review_many(batch)
    sent = scripted_server.count
    with pytest.raises(LLMCallError, match="3 of 3 calls got no reply"):
        ReviewClient(cfg, db, progress=False).review_many(batch)
    assert scripted_server.count == sent + 3  # the three good replies were cached before the error


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_non_http_reply_is_a_recorded_one_line_failure(scripted_server, transport):
    scripted_server.script("case:bad", BadHTTP())
    bad, good = ReviewClient(_cfg(scripted_server, transport=transport), None, progress=False).review_many(
        [ReviewRequest("case:bad"), ReviewRequest("fine")])
    assert not bad.ok and "status line" in bad.failure.lower() and "\n" not in bad.failure
    assert good.ok


def test_embedded_cache_identity_is_the_model_file():
    emb = OmegaConf.to_container(OmegaConf.load(CONF / "embedded.yaml"))
    other = {**emb, "embedded": {**emb["embedded"], "model": {**emb["embedded"]["model"], "file": "other.gguf"}}}
    ids = {ReviewClient(c, None, progress=False).model_identity for c in (emb, other)}
    assert len(ids) == 2 and all("gguf" in i for i in ids)
    served = OmegaConf.to_container(OmegaConf.load(CONF / "qwen3_4b.yaml"), resolve=True)
    assert ReviewClient(served, None, progress=False).model_identity is None


def test_request_body_carries_decoding_schema_and_template_kwargs(scripted_server):
    cfg = _cfg(scripted_server, temperature=0.2, top_p=0.9, chat_template_kwargs={"enable_thinking": False},
               extra_body={"skip_special_tokens": False})
    ReviewClient(cfg, None, progress=False).review_many([ReviewRequest("h", "e")])
    body = scripted_server.requests[0]
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"]) == ("scripted-model", 0.2, 0.9, 256)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}  # server fields merged into the JSON
    assert body["skip_special_tokens"] is False
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert list(schema["properties"]) == ["reasoning", "review", "confidence"]
    assert "logprobs" not in body

    scripted_server.requests.clear()
    ReviewClient(_cfg(scripted_server, structured_output="structured_outputs"), None, progress=False).review_many(
        [ReviewRequest("h", "e")])
    body = scripted_server.requests[0]
    assert "response_format" not in body and body["structured_outputs"]["json"]["required"] == [
        "reasoning", "review", "confidence"]

    scripted_server.requests.clear()
    ReviewClient(_cfg(scripted_server, structured_output="none"), None, progress=False).review_many(
        [ReviewRequest("h", "e")])
    assert "response_format" not in scripted_server.requests[0] and "structured_outputs" not in scripted_server.requests[0]


def test_clause_reasons_latin_pattern_and_marked_when_cut(scripted_server):
    """llm.reasoning_charset=latin sends the pattern; a reason as long as reasoning_max_chars was cut
    by the grammar and reads "…" at the end, a shorter one is left as the model wrote it."""
    cut, whole = "x" * 20, "short enough"
    scripted_server.script("case:cut", Reply('{"review":"yes","confidence":0.9,"reasoning":"' + cut + '"}'))
    scripted_server.script("case:whole", Reply('{"review":"no","confidence":0.2,"reasoning":"' + whole + '"}'))
    cfg = _cfg(scripted_server, reasoning_max_chars=20, reasoning_charset="latin")
    a, b = ReviewClient(cfg, None, progress=False).review_many([ReviewRequest("case:cut"), ReviewRequest("case:whole")])
    assert (a.reasoning, b.reasoning) == (cut + "…", whole)
    reasoning = scripted_server.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["reasoning"]
    assert reasoning["maxLength"] == 20 and reasoning["pattern"].endswith("]{0,20}$")
    with pytest.raises(ValueError, match="reasoning_charset"):
        ReviewClient(_cfg(scripted_server, reasoning_charset="cjk"), None, progress=False).review_many(
            [ReviewRequest("h", "e")])


def _lp(token, p, alts=()):
    return {"token": token, "logprob": math.log(p), "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in alts]}


def test_logprob_confidence_with_stated_fallback(scripted_server):
    entries = [_lp('{"', 1.0), _lp("review", 1.0), _lp('":"', 1.0), _lp("no", 0.7, [("no", 0.7), ("yes", 0.3)])]
    scripted_server.script("case:lp", Reply('{"review":"no","confidence":0.9,"reasoning":"r"}', logprobs=entries))
    scripted_server.script("case:nolp", Reply('{"review":"yes","confidence":0.8,"reasoning":"r"}'))
    client = ReviewClient(_cfg(scripted_server, confidence="logprob", top_logprobs=5), None, progress=False)
    lp, nolp = client.review_many([ReviewRequest("case:lp"), ReviewRequest("case:nolp")])
    assert (lp.review, lp.confidence, lp.confidence_source) == ("no", pytest.approx(0.3), "logprob")
    assert (nolp.review, nolp.confidence, nolp.confidence_source) == ("yes", 0.8, "stated")
    body = scripted_server.requests[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    # P(yes) is read at the verdict, so the verdict is asked for before the reasoning
    assert list(body["response_format"]["json_schema"]["schema"]["properties"])[0] == "review"


def test_concurrency_is_bounded(tmp_path):
    with ScriptedServer(latency=0.2) as server:
        client = ReviewClient(_cfg(server, concurrency=4), None, progress=False)
        start = time.perf_counter()
        results = client.review_many([ReviewRequest(f"h{i}") for i in range(16)])
        elapsed = time.perf_counter() - start
    assert all(r.ok for r in results)
    assert server.max_in_flight == 4
    assert 0.75 < elapsed < 3.0  # 16 / 4 x 0.2 s = 0.8 s at best; one at a time would be 3.2 s


def test_api_key_from_env_reaches_the_server_but_never_the_cache(scripted_server, tmp_path, monkeypatch):
    secret = "sk-hygrail-test-SECRET-4242"
    monkeypatch.setenv("HYGRAIL_TEST_KEY", secret)
    cfg = _cfg(scripted_server, api_key_env="HYGRAIL_TEST_KEY")
    client = ReviewClient(cfg, tmp_path / "llm.db", progress=False)
    client.review_many([ReviewRequest(f"h{i}", "e") for i in range(3)])
    client.chat([{"role": "user", "content": "naturalize this"}])
    assert scripted_server.authorizations[0] == f"Bearer {secret}"
    client.close()
    blobs = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert len(blobs) > 0 and secret.encode() not in blobs
    assert secret not in json.dumps(client.cfg) and secret not in json.dumps(client.usage())


def test_chat_returns_text_and_raises_on_failure(scripted_server, tmp_path):
    scripted_server.script("case:nat", Reply("Graph facts: A links B. Background: none."))
    scripted_server.script("case:dead", Status(500))
    client = ReviewClient(_cfg(scripted_server), tmp_path / "llm.db", progress=False)
    msgs = [{"role": "user", "content": "case:nat"}]
    assert client.chat(msgs) == "Graph facts: A links B. Background: none."
    assert "response_format" not in scripted_server.requests[0]  # free text: no schema
    assert client.chat(msgs) == "Graph facts: A links B. Background: none."
    assert scripted_server.count == 1  # cached
    with pytest.raises(LLMCallError, match="HTTP 500"):
        client.chat([{"role": "user", "content": "case:dead"}])
    assert client.chat_many([msgs, [{"role": "user", "content": "case:dead"}]]) == [
        "Graph facts: A links B. Background: none.", None]
    assert client.usage()["failures"] == 2


def test_settings_validation_and_configs():
    with pytest.raises(ValueError, match="llm.confidence"):
        llm_settings({"model": "m", "base_url": "http://x", "confidence": "vibes"})
    with pytest.raises(ValueError, match="llm.transport"):
        llm_settings({"model": "m", "base_url": "http://x", "transport": "curl"})
    with pytest.raises(ValueError, match="llm.base_url"):
        llm_settings({"model": "m"})
    for name in ("qwen3_4b", "qwen3_14b", "ministral_3b", "magistral_14b", "embedded", "tiny"):
        cfg = llm_settings(OmegaConf.load(CONF / f"{name}.yaml"))
        assert cfg["name"] == name and (cfg["temperature"], cfg["top_p"]) == (0.2, 0.9)
    assert llm_settings(OmegaConf.load(CONF / "qwen3_14b.yaml"))["chat_template_kwargs"] == {"enable_thinking": False}
    for name in ("ministral_3b", "magistral_14b"):  # keep [THINK] markers so thinking is told from the answer
        assert llm_settings(OmegaConf.load(CONF / f"{name}.yaml"))["extra_body"] == {"skip_special_tokens": False}
    assert llm_settings(OmegaConf.load(CONF / "qwen3_4b.yaml"))["timeout"] == 180


def test_base_url_from_env(monkeypatch):
    monkeypatch.setenv("HYGRAIL_QWEN3_4B_URL", "http://gpu-box:9001/v1")
    assert llm_settings(OmegaConf.load(CONF / "qwen3_4b.yaml"))["base_url"] == "http://gpu-box:9001/v1"


def test_scripted_config_needs_its_url(scripted_server):
    cfg = OmegaConf.load(CONF / "scripted.yaml")
    with pytest.raises(Exception, match="base_url"):
        llm_settings(cfg)
    cfg.base_url = scripted_server.base_url
    [r] = ReviewClient(cfg, None, progress=False).review_many([ReviewRequest("h", "e")])
    assert (r.review, r.confidence) == ("yes", 0.8)


def test_only_complete_replies_are_cached(scripted_server, tmp_path):
    """A review cut at max_tokens before its verdict, an aborted generation and a truncated chat
    are not answers worth keeping: a rerun asks again. A verdict salvaged from a cut reply is."""
    scripted_server.script("case:cut-before-verdict", Reply('{"reasoning": "Because the', finish_reason="length"))
    scripted_server.script("case:cut-after-verdict", Reply('{"review": "no", "confidence": 0.2, "reasoning": "Be',
                                                           finish_reason="length"))
    scripted_server.script("case:abort", Reply("", finish_reason="abort"))
    scripted_server.script("case:long-chat", Reply("A summary that ran o", finish_reason="length"))
    cfg = _cfg(scripted_server, max_retries=0)
    reviews = [ReviewRequest(m) for m in ("case:cut-before-verdict", "case:cut-after-verdict", "case:abort", "fine")]
    chats = [[{"role": "user", "content": "case:long-chat"}], [{"role": "user", "content": "short chat"}]]
    for _ in range(2):
        client = ReviewClient(cfg, tmp_path / "llm", progress=False)
        before = client.review_many(reviews)
        texts = client.chat_many(chats)
    assert [r.ok for r in before] == [False, True, False, True] and before[1].salvaged
    assert texts[0] == "A summary that ran o"  # used, but not kept
    assert [r.cache_hit for r in before] == [False, True, False, True]
    assert client.usage()["cache_hits"] == 3  # 2 reviews + the short chat; the rest went out again
    assert scripted_server.count == 6 + 3


def test_url_credentials_travel_as_headers_and_query_and_never_in_messages(scripted_server, monkeypatch):
    host = scripted_server.base_url.split("//", 1)[1]
    url = f"http://alice:pw-SECRET-{42}@{host}?token=tok-SECRET-77"
    [r] = ReviewClient(_cfg(scripted_server, base_url=url), None, progress=False).review_many([ReviewRequest("h")])
    assert r.ok and scripted_server.authorizations[-1] == "Basic YWxpY2U6cHctU0VDUkVULTQy"  # alice:pw-SECRET-42
    assert scripted_server.paths[-1] == "/v1/chat/completions?token=tok-SECRET-77"
    monkeypatch.setenv("HYGRAIL_TEST_KEY", "sk-also-a-key-1234567890")
    with pytest.raises(LLMCallError, match="one Authorization header") as e:
        ReviewClient(_cfg(scripted_server, base_url=url, api_key_env="HYGRAIL_TEST_KEY"), None,
                     progress=False).review_many([ReviewRequest("h2")])
    assert "SECRET" not in str(e.value) and "alice" not in str(e.value)


def test_probe_names_what_is_wrong_before_any_request(scripted_server, monkeypatch, closed_url):
    from hygrail.review.client import probe

    down = closed_url
    assert probe(_cfg(scripted_server)) == [scripted_server.base_url]
    assert probe({"name": "e", "model": "m", "embedded": {"x": 1}}) == []  # started by the client itself
    with pytest.raises(LLMCallError, match=rf"llm scripted: no server reachable at {down}\?token=\[redacted\] \(ConnectError"):
        probe(_cfg(scripted_server, base_url=f"{down}?token=tok-SECRET-1"))
    with pytest.raises(LLMCallError, match=r"serves \['scripted-model'\], not 'other-model'"):
        probe(_cfg(scripted_server, model="other-model"))
    # a replica down among live ones: left out with a warning, the others carry on
    assert probe(_cfg(scripted_server, base_url=f"{down},{scripted_server.base_url}")) == [scripted_server.base_url]
    assert scripted_server.count == 0 and scripted_server.paths == ["/v1/models"] * 3  # no chat request


_BATCH = textwrap.dedent(
    """
    import sys
    from hygrail.review.client import ReviewClient
    from hygrail.review.contract import ReviewRequest
    cfg = {"name": "s", "model": "scripted-model", "base_url": sys.argv[1].split(","), "concurrency": 3,
           "timeout": 10, "max_retries": 0}
    results = ReviewClient(cfg, None, progress=False, slots_dir=sys.argv[2]).review_many(
        [ReviewRequest(f"{sys.argv[3]} {i}") for i in range(12)])
    assert all(r.ok for r in results)
    """
)


def test_replicas_share_the_load_and_bound_in_flight_across_processes(tmp_path):
    """Two processes (two sweep jobs) against two replicas with concurrency 3: never more than 3
    requests at once on either replica, although each process alone would send 6 at once."""
    with ScriptedServer(latency=0.3) as a, ScriptedServer(latency=0.3) as b:
        urls = f"{a.base_url},{b.base_url}"
        procs = [subprocess.Popen([sys.executable, "-c", _BATCH, urls, str(tmp_path / "slots"), tag], cwd=ROOT)
                 for tag in ("job-a", "job-b")]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert a.count + b.count == 24 and a.count >= 6 and b.count >= 6  # spread over both
    assert a.max_in_flight == 3 and b.max_in_flight == 3
