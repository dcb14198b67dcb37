"""Confidence threshold γ and the review decision rule (paper §3.4).

Two rules (``llm.decision``), each with γ chosen on the validation routed (reviewed) hypotheses:

- ``paper`` (default, the paper's): accept iff the review says "yes" and its confidence is >= γ;
  γ among the confidences of the "yes" reviews.
- ``probability``: accept iff the confidence is >= γ, whatever the verdict; γ among the confidences
  of all reviews. For judges whose confidence is P(yes) from the verdict token's logprobs, where
  the verdict is only that probability rounded at 0.5: the embedded 1.5B model answered "no" to
  every one of 40 band hypotheses in `make run` (P(yes) 0.20-0.29), so the paper's rule could only
  reject, although the ranking by P(yes) carried information (AUC 0.68 on 140 band hypotheses).
  The verdict's threshold, 0.5, is then one candidate among many, picked or not by validation.

Whose F1 γ maximises the paper does not say: the pipeline passes the GNN's fixed validation decisions outside
the reviewed set (`base_counts`), so γ maximises F1 of the whole validation decision, the quantity
the tables report; with `base_counts=(0, 0, 0)` it is F1 on the reviewed hypotheses alone. A
failed review (no verdict) is decided explicitly by `on_failure`: the GNN-only decision passed as
`fallback` (default), "reject" or "accept" — never silently "no".
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from hygrail.review.contract import YES, ReviewResult

ON_FAILURE = ("fallback", "reject", "accept")
DECISIONS = ("paper", "probability")


def _verdicts(results: Sequence[ReviewResult]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ok = np.array([r.ok for r in results], dtype=bool)
    yes = np.array([r.ok and r.review == YES for r in results], dtype=bool)
    conf = np.array([r.confidence if r.ok else np.nan for r in results], dtype=float)
    return ok, yes, conf


def _failure_decisions(ok: np.ndarray, fallback: np.ndarray | None, on_failure: str) -> np.ndarray | None:
    """0/1 decision per item for failed reviews (values at ok items are meaningless); None when
    the failures cannot be decided because no fallback was given."""
    if on_failure not in ON_FAILURE:
        raise ValueError(f"on_failure={on_failure!r}: expected one of {ON_FAILURE}")
    if on_failure == "reject":
        return np.zeros(len(ok), dtype=np.int8)
    if on_failure == "accept":
        return np.ones(len(ok), dtype=np.int8)
    if fallback is None:
        return None
    fallback = np.asarray(fallback).astype(np.int8)
    if fallback.shape != ok.shape:
        raise ValueError(f"fallback has shape {fallback.shape}, expected ({len(ok)},): one GNN decision per review")
    return fallback


def _eligible(yes: np.ndarray, ok: np.ndarray, rule: str) -> np.ndarray:
    """Reviews the rule may accept: "yes" ones (paper), or every review with a verdict (probability)."""
    if rule not in DECISIONS:
        raise ValueError(f"decision rule {rule!r}: expected one of {DECISIONS}")
    return yes if rule == "paper" else ok


def decide(
    results: Sequence[ReviewResult],
    gamma: float,
    fallback: np.ndarray | None = None,
    on_failure: str = "fallback",
    rule: str = "paper",
) -> np.ndarray:
    """0/1 decision per routed hypothesis: (review == yes and) confidence >= γ per `rule`;
    failures per `on_failure`."""
    ok, yes, conf = _verdicts(results)
    eligible = _eligible(yes, ok, rule)
    failed = _failure_decisions(ok, fallback, on_failure)
    if failed is None and not ok.all():
        raise ValueError(f"{int((~ok).sum())} failed reviews and on_failure='fallback' but no fallback decisions given")
    with np.errstate(invalid="ignore"):
        accepted = (eligible & (conf >= gamma)).astype(np.int8)
    return np.where(ok, accepted, failed if failed is not None else 0).astype(np.int8)


def choose_gamma(
    results: Sequence[ReviewResult],
    labels: np.ndarray,
    fallback: np.ndarray | None = None,
    on_failure: str = "fallback",
    base_counts: tuple[int, int, int] = (0, 0, 0),
    rule: str = "paper",
) -> float:
    """γ maximising F1 of the decision (`rule`) on the validation routed hypotheses.

    Candidates are the confidences of the reviews the rule may accept ("yes" reviews for the paper's
    rule, all for `probability`) plus +inf (accept none); ties go to the larger γ (fewer LLM
    acceptances). Failed reviews count with the decision `decide` would give
    them; with on_failure="fallback" and no `fallback`, they are left out. `base_counts` (TP, FP,
    FN of the GNN's fixed decisions outside the band) makes the maximised F1 that of the whole
    HyGRAIL decision on val instead of the routed subset alone."""
    labels = np.asarray(labels).astype(bool)
    if labels.shape != (len(results),):
        raise ValueError(f"labels has shape {labels.shape}, expected ({len(results)},)")
    ok, yes, conf = _verdicts(results)
    eligible = _eligible(yes, ok, rule)
    failed = _failure_decisions(ok, fallback, on_failure)
    tp0, fp0, fn0 = base_counts
    if failed is not None:
        fixed = ~ok & failed.astype(bool)
        tp0 += int((fixed & labels).sum())
        fp0 += int((fixed & ~labels).sum())
        fn0 += int((~ok & ~failed.astype(bool) & labels).sum())
    best_f1, best_gamma = -1.0, math.inf
    for gamma in [math.inf, *sorted(set(conf[eligible].tolist()), reverse=True)]:
        pred = eligible & (np.nan_to_num(conf, nan=-1.0) >= gamma)
        tp = tp0 + int((pred & labels).sum())
        fp = fp0 + int((pred & ~labels).sum())
        fn = fn0 + int((ok & ~pred & labels).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best_f1:  # strict: among equal F1 the larger γ (visited first) stays
            best_f1, best_gamma = f1, gamma
    return float(best_gamma)
