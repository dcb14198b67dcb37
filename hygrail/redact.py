"""Secrets never leave the environment: redaction of API keys and URL credentials in everything the
project writes (MLflow params, tags and the config artifact, log lines, error messages).

A secret is recognised in four ways, because it can arrive in four ways:
- by where it sits in a config: a key named like a secret (``api_key``, ``token``, ``password``;
  ``*_env`` keys only name a variable and stay), or the value after ``--api-key``-style flags in
  a command-line list (``llm.serve.extra_args``);
- inside a URL: userinfo (``http://user:pass@host``) and query values whose name looks secret
  (``?token=...``, ``?api_key=...``, ``?sig=...``);
- by its value: any environment variable whose name looks secret (``*_KEY``, ``*_TOKEN``,
  ``*_PASSWORD``, ...) or that a config names in ``api_key_env``, wherever that value appears;
- by shape: ``Bearer <token>``, ``sk-...`` and ``hf_...`` keys.
Values shorter than 8 characters are not treated as secrets by value (``1``, ``true`` would
otherwise vanish from every log line).

Hydra itself writes command-line overrides verbatim to ``.hydra/overrides.yaml`` and its launch
line: secrets belong in the environment (the configs name the variable), never on the command line.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Iterable, Mapping

MASK = "[redacted]"
# Config keys: whole name parts (``max_tokens`` is not a token). Environment names: substrings (PGPASSWORD).
_SECRET_PART = re.compile(r"(^|[-_.])(api[-_]?key|apikey|token|secret|passw(or)?d|pwd|credentials?|auth|signature|sig)($|[-_.])", re.I)
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL)", re.I)
_SECRET_FLAG = re.compile(r"^--?[\w-]*(api[-_]?key|token|secret|passw(or)?d|credential)[\w-]*$", re.I)
_URL_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]+)@", re.I)
_QUERY_SECRET = re.compile(r"(?P<name>[?&;][^=&#\s]*(?:key|token|secret|passw(?:or)?d|pwd|sig|signature|auth|credential)"
                           r"[^=&#\s]*=)(?P<value>[^&#\s'\"]+)", re.I)
_SHAPES = re.compile(r"(?P<p>Bearer\s+)[A-Za-z0-9._~+/=-]{8,}|\b(sk|hf)[-_][A-Za-z0-9_-]{16,}", re.I)
_FLAG_INLINE = re.compile(r"(?P<flag>--?[\w-]*(?:api[-_]?key|token|secret|passw(?:or)?d)[\w-]*[= ])(?P<value>[^\s'\",\]]+)", re.I)
MIN_SECRET = 8


def secret_values(extra_env_names: Iterable[str] = ()) -> list[str]:
    """Values of environment variables that hold secrets: named like one, or named by a config."""
    names = set(extra_env_names)
    out = [v for k, v in os.environ.items() if (k in names or _SECRET_ENV.search(k)) and len(v) >= MIN_SECRET]
    return sorted(set(out), key=len, reverse=True)  # longest first: a key containing another


def redact(text: str, extra_env_names: Iterable[str] = ()) -> str:
    """``text`` with every secret it contains replaced by ``[redacted]``."""
    if not text:
        return text
    for value in secret_values(extra_env_names):
        text = text.replace(value, MASK)
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _QUERY_SECRET.sub(lambda m: f"{m['name']}{MASK}", text)
    text = _FLAG_INLINE.sub(lambda m: f"{m['flag']}{MASK}", text)
    return _SHAPES.sub(lambda m: f"{m['p']}{MASK}" if m["p"] else MASK, text)


def redact_config(obj: Any, extra_env_names: Iterable[str] | None = None) -> Any:
    """A plain config (dicts, lists, scalars) with secrets replaced: secret-named keys lose their
    value, the argument after a secret flag in a list is masked, every string is ``redact``ed."""
    if extra_env_names is None:
        extra_env_names = set(_env_names(obj))
    if isinstance(obj, Mapping):
        return {k: MASK if _secret_key(k) and obj[k] is not None else redact_config(v, extra_env_names)
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        out, mask_next = [], False
        for v in obj:
            out.append(MASK if mask_next else redact_config(v, extra_env_names))
            mask_next = isinstance(v, str) and bool(_SECRET_FLAG.match(v))
        return out
    if isinstance(obj, str):
        return redact(obj, extra_env_names)
    return obj


def _secret_key(key: Any) -> bool:
    k = str(key)
    return bool(_SECRET_PART.search(k)) and not k.endswith("_env")


def _env_names(obj: Any) -> Iterable[str]:
    """Variable names the config itself points at (``api_key_env: HYGRAIL_LLM_API_KEY``)."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if str(k).endswith("_env") and isinstance(v, str):
                yield v
            else:
                yield from _env_names(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _env_names(v)


class RedactFilter(logging.Filter):
    """A logging filter for handlers (Hydra's ``job_logging``/``hydra_logging``): the record's
    message, arguments merged, is redacted before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is the logging module's to report
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
