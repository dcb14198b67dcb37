"""Secrets are recognised by where they sit, inside URLs, by value and by shape; ordinary values
that merely look alike (max_tokens, a short number) are left alone."""

import logging

from hygrail.redact import MASK, RedactFilter, redact, redact_config


def test_urls_lose_userinfo_and_secret_query_values_only():
    assert redact("http://alice:pw@gpu1:8001/v1") == f"http://{MASK}@gpu1:8001/v1"
    assert redact("postgresql://mlflow:hunter2@db/mlflow") == f"postgresql://{MASK}@db/mlflow"
    assert redact("https://h/v1?api-version=2024-06&api_key=abc&sig=xyz") == f"https://h/v1?api-version=2024-06&api_key={MASK}&sig={MASK}"
    assert redact("error at http://127.0.0.1:8001/v1: refused") == "error at http://127.0.0.1:8001/v1: refused"


def test_secrets_by_value_and_shape(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-value-without-shape")
    monkeypatch.setenv("SHORT_KEY", "1234")  # too short to be told from ordinary text
    text = "token plain-value-without-shape, Authorization: Bearer abcdefgh12345678, sk-0123456789abcdefghij, 1234"
    assert redact(text) == f"token {MASK}, Authorization: Bearer {MASK}, {MASK}, 1234"
    assert redact("vllm serve m --api-key=abc123 --port 8001") == f"vllm serve m --api-key={MASK} --port 8001"


def test_config_keys_and_flag_arguments():
    cfg = {"llm": {"api_key": "k", "api_key_env": "HYGRAIL_LLM_API_KEY", "max_tokens": 1024, "password": None,
                   "serve": {"extra_args": ["--api-key", "abc", "--max-num-seqs", "64"]},
                   "base_url": ["http://u:p@a/v1", "http://b/v1"]}}
    assert redact_config(cfg) == {"llm": {
        "api_key": MASK, "api_key_env": "HYGRAIL_LLM_API_KEY", "max_tokens": 1024, "password": None,
        "serve": {"extra_args": ["--api-key", MASK, "--max-num-seqs", "64"]},
        "base_url": [f"http://{MASK}@a/v1", "http://b/v1"]}}


def test_a_variable_the_config_names_is_secret_whatever_its_name(monkeypatch):
    monkeypatch.setenv("ODD_NAME", "value-of-the-odd-variable")
    cfg = {"api_key_env": "ODD_NAME", "note": "got value-of-the-odd-variable"}
    assert redact_config(cfg)["note"] == f"got {MASK}"


def test_log_filter_redacts_messages_arguments_and_tracebacks():
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "calling %s", ("http://u:p@h/v1",), None)
    try:
        raise RuntimeError("at http://u:secret@h/v1")
    except RuntimeError as e:
        record.exc_info = (type(e), e, e.__traceback__)
    assert RedactFilter().filter(record)
    assert record.getMessage() == f"calling http://{MASK}@h/v1"
    assert "secret" not in record.exc_text and MASK in record.exc_text
