"""The review contract (paper §3.4, App. B.2): one JSON object per routed hypothesis.

`{"reasoning": str, "review": "yes"|"no", "confidence": 0..1}` where confidence is P(hypothesis is
true). Servers are asked for it through a JSON schema where they support one; replies are still
parsed defensively (code fences, thinking blocks, trailing prose, 0-100 scales, cut-off output),
and a reply that cannot be read becomes a recorded failure carrying its raw text, never a "no".
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Sequence

YES, NO = "yes", "no"


REASONING = ("full", "clause", "none")


def review_fields(review_first: bool, reasoning: str = "full", stated_confidence: bool = True) -> tuple[str, ...]:
    """The reply's fields in the order the model writes them (prompt and schema share it).

    The paper's contract is (reasoning, review, confidence). ``review_first`` puts the verdict first,
    so that P(yes) can be read from its token. A judge whose confidence is read from logprobs needs
    no stated confidence (``stated_confidence=False``), and ``reasoning`` may shrink to one clause or
    go (``clause`` | ``none``): on the embedded CPU model every generated token costs ~70 ms."""
    if reasoning not in REASONING:
        raise ValueError(f"reasoning={reasoning!r}: expected one of {REASONING}")
    verdict = ("review", "confidence") if stated_confidence else ("review",)
    if reasoning == "none":
        return verdict
    return (*verdict, "reasoning") if review_first else ("reasoning", *verdict)


# What a reason may be written in under ``llm.reasoning_charset: latin``: printable ASCII without
# '"', '[', '\\', ']' (a grammar built from a pattern emits the string's characters raw, so a quote or
# backslash would end or break the JSON), Latin-1 and Latin Extended letters, Greek, typographic
# dashes and quotes, sub- and superscripts: English and material formulas (β-TCP, 10⁻³). Why: the
# embedded 1.5B Qwen drifted into Chinese mid-reason on 4 of make discover's 20 cards ("used as a
# catalyst in various化学"); with this pattern none of 12 re-asked did (llama.cpp honours it).
LATIN = " !#-Z^-~\u00a0-\u024f\u0370-\u03ff\u2010-\u2027\u2070-\u209f"
CHARSETS = ("any", "latin")


def review_schema(fields: Sequence[str], reasoning_max_chars: int | None = None, reasoning_charset: str = "any") -> dict:
    """JSON schema of a review with ``fields`` (``review_fields``). Grammar-constrained decoders emit
    properties in schema order, so the order of ``fields`` is the order of the reply.
    ``reasoning_charset="latin"`` restricts the reason to ``LATIN`` by a pattern, which carries the
    length bound too (a decoder may honour either keyword alone)."""
    if reasoning_charset not in CHARSETS:
        raise ValueError(f"llm.reasoning_charset={reasoning_charset!r}: expected one of {CHARSETS}")
    reasoning: dict[str, Any] = {"type": "string"}
    if reasoning_max_chars:
        reasoning["maxLength"] = int(reasoning_max_chars)
    if reasoning_charset == "latin":
        reasoning["pattern"] = f"^[{LATIN}]" + (f"{{0,{int(reasoning_max_chars)}}}$" if reasoning_max_chars else "*$")
    types = {
        "review": {"type": "string", "enum": [YES, NO]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": reasoning,
    }
    props = {f: types[f] for f in fields}
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class ReviewRequest:
    """One routed hypothesis. `evidence=None` selects the no-evidence (model prior) prompt."""

    hypothesis: str
    evidence: str | None = None


@dataclass(frozen=True)
class Example:
    """A solved review for the prompt's few-shot block: a training hypothesis, its evidence as the
    cell's evidence mode renders it, and the right verdict (``hygrail.review.fewshot``)."""

    request: ReviewRequest
    verdict: str  # YES | NO


@dataclass
class ReviewResult:
    review: str | None  # "yes" | "no" | None on failure
    confidence: float | None  # P(hypothesis true) in [0, 1]
    confidence_source: str | None  # "stated" | "logprob" | None on failure
    reasoning: str
    raw: str  # the reply text as received (empty when no reply came back)
    failure: str | None  # why this review has no verdict; None when it has one
    salvaged: bool = False  # verdict read from an incomplete object (e.g. cut off by max_tokens)
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None  # prompt tokens served from the server's prefix cache
    latency: float = 0.0  # server seconds of the call (the original call's, on a cache hit)
    retries: int = 0
    cache_hit: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def new_prompt_tokens(self) -> int:
        return self.prompt_tokens - (self.cached_tokens or 0)

    def to_dict(self) -> dict:
        return asdict(self)


class LLMCallError(RuntimeError):
    """Calls that produced no reply (after retries): one chat, or too many of a batch."""


def commonest_failure(failures: Sequence[str]) -> tuple[str, int, str]:
    """The most frequent kind of failure (the text before its first ':'), how often it occurred,
    and one full message of that kind: what a one-line error about a batch should name."""
    kind, times = Counter(f.split(":", 1)[0] for f in failures).most_common(1)[0]
    return kind, times, next(f for f in failures if f.startswith(kind))


class ParseError(ValueError):
    """A reply that holds no readable review."""


_THINK = re.compile(r"<think>.*?</think>|\[THINK\].*?\[/THINK\]", re.S | re.I)
_OPEN_THINK = re.compile(r"<think>|\[THINK\]", re.I)
_REVIEW_FIELD = re.compile(r'"review"\s*:\s*"?(yes|no|true|false)\b', re.I)
# The number must be complete (a delimiter follows): a reply cut at "0." or "8" (of 85) has none.
_CONF_FIELD = re.compile(r'"confidence"\s*:\s*"?(-?\d+(?:\.\d+)?)\s*(%?)(?=\s*"?\s*[,}\n])')
_REASONING_FIELD = re.compile(r'"reasoning"\s*:\s*"((?:[^"\\]|\\.)*)', re.S)


def strip_thinking(text: str) -> str:
    """Drop reasoning-model thinking blocks; an unclosed block (cut off) leaves nothing usable."""
    text = _THINK.sub("", text)
    m = _OPEN_THINK.search(text)
    return text[: m.start()] if m else text


def _json_objects(text: str) -> list[tuple[dict, int]]:
    """Top-level JSON objects in `text`, each with the index just past its end."""
    decoder = json.JSONDecoder()
    found, i = [], text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append((obj, end))
        i = text.find("{", end)
    return found


def normalize_review(value: Any) -> str | None:
    if isinstance(value, bool):
        return YES if value else NO
    if isinstance(value, str):
        v = value.strip().strip(".!").lower()
        if v in ("yes", "true", "accept", "supported"):
            return YES
        if v in ("no", "false", "reject", "unsupported"):
            return NO
    return None


def normalize_confidence(value: Any) -> float | None:
    """Accept 0-1 and 0-100 scales (paper §3.4 states q in [0, 100]; B.2 states 0.XX)."""
    percent = False
    if isinstance(value, str):
        v = value.strip()
        percent = v.endswith("%")
        try:
            value = float(v.rstrip("%").strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    value = float(value)
    if percent or 1.0 < value <= 100.0:
        value /= 100.0
    return value if 0.0 <= value <= 1.0 else None


@dataclass(frozen=True)
class ParsedReview:
    review: str
    confidence: float | None  # None: the reply stated none (a logprob may still supply it)
    reasoning: str
    salvaged: bool


def parse_review(text: str) -> ParsedReview:
    """Read the last JSON object carrying a readable `review`, unless a cut-off answer follows it;
    else salvage the fields from the incomplete object. Raises ParseError naming what is missing."""
    body = strip_thinking(text or "")
    for obj, end in reversed(_json_objects(body)):
        review = normalize_review(obj.get("review"))
        if review is None:
            continue
        if _REVIEW_FIELD.search(body, end):  # a later, cut-off answer: the object was a draft
            body = body[end:]
            break
        reasoning = obj.get("reasoning", "")
        return ParsedReview(
            review,
            normalize_confidence(obj.get("confidence")),
            reasoning if isinstance(reasoning, str) else json.dumps(reasoning),
            salvaged=False,
        )
    # Cut-off or otherwise broken JSON: the fields may still be complete on their own. The last
    # occurrence is the answer (a draft object may come before it, e.g. in unmarked thinking).
    m = _last(_REVIEW_FIELD, body)
    if m is None:
        raise ParseError("no readable review field" if body.strip() else "empty reply")
    c = _last(_CONF_FIELD, body)
    conf = normalize_confidence(c.group(1) + c.group(2)) if c else None
    r = _last(_REASONING_FIELD, body)
    return ParsedReview(normalize_review(m.group(1)), conf, _json_string(r.group(1)) if r else "", True)


def _last(pattern: re.Pattern, text: str) -> re.Match | None:
    m = None
    for m in pattern.finditer(text):  # noqa: B007 - the last match is the one wanted
        pass
    return m


def _json_string(fragment: str) -> str:
    try:
        return json.loads(f'"{fragment}"')
    except json.JSONDecodeError:  # cut inside an escape sequence
        return fragment


_REVIEW_VALUE = re.compile(r'"review"\s*:\s*"')


def review_value_token(tokens: Sequence[str]) -> tuple[int, str] | None:
    """Index of the token holding the first character of the review value, and the part of that
    token before the value (e.g. '"' for a '"yes' token). None when the reply has no such field."""
    text = "".join(tokens)
    m = _REVIEW_VALUE.search(text)
    if m is None:
        return None
    start = 0
    for i, tok in enumerate(tokens):
        if start + len(tok) > m.end():
            return i, text[start : m.end()]
        start += len(tok)
    return None


def p_yes_from_logprobs(entries: Sequence[dict]) -> float | None:
    """P(yes) / (P(yes) + P(no)) at the review-value token, from its top alternatives.

    `entries` are OpenAI-style logprob entries ({token, logprob, top_logprobs: [{token, logprob}]}).
    The alternatives are compared after removing the part of the token that precedes the value;
    a prefix of "yes"/"no" ("y", "n") counts as that answer. None when it cannot be read."""
    found = review_value_token([e.get("token", "") for e in entries])
    if found is None:
        return None
    i, prefix = found
    mass = {YES: 0.0, NO: 0.0}
    for alt in entries[i].get("top_logprobs") or [entries[i]]:
        tok = alt.get("token", "")
        if not tok.startswith(prefix):
            continue
        rest = tok[len(prefix) :].strip().lower()
        for answer in (YES, NO):
            if rest and (answer.startswith(rest) or rest.startswith(answer)):
                mass[answer] += math.exp(alt["logprob"])
    total = mass[YES] + mass[NO]
    return mass[YES] / total if total > 0 else None


def trim_logprobs(entries: Sequence[dict]) -> list[dict]:
    """Keep logprob entries up to the review-value token: all that P(yes) needs, and small
    enough to cache (a full 1,000-token reply with alternatives is ~200 kB)."""
    found = review_value_token([e.get("token", "") for e in entries])
    return list(entries[: found[0] + 1]) if found else []
