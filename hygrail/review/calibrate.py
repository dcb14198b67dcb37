"""Confidence threshold γ and the review decision rule (paper §3.4).

A routed hypothesis is accepted iff the review says "yes" and its confidence is >= γ. γ is chosen
among the confidences of the validation routed (reviewed) hypotheses, as in the paper. Whose F1 it
maximises the paper does not say: the pipeline passes the GNN's fixed validation decisions outside
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


def decide(
    results: Sequence[ReviewResult],
    gamma: float,
    fallback: np.ndarray | None = None,
    on_failure: str = "fallback",
) -> np.ndarray:
    """0/1 decision per routed hypothesis: review == yes and confidence >= γ; failures per `on_failure`."""
    ok, yes, conf = _verdicts(results)
    failed = _failure_decisions(ok, fallback, on_failure)
    if failed is None and not ok.all():
        raise ValueError(f"{int((~ok).sum())} failed reviews and on_failure='fallback' but no fallback decisions given")
    with np.errstate(invalid="ignore"):
        accepted = (yes & (conf >= gamma)).astype(np.int8)
    return np.where(ok, accepted, failed if failed is not None else 0).astype(np.int8)


def choose_gamma(
    results: Sequence[ReviewResult],
    labels: np.ndarray,
    fallback: np.ndarray | None = None,
    on_failure: str = "fallback",
    base_counts: tuple[int, int, int] = (0, 0, 0),
) -> float:
    """γ maximising F1 of the decision on the validation routed hypotheses.

    Candidates are the confidences of "yes" reviews plus +inf (accept none); ties go to the
    larger γ (fewer LLM acceptances). Failed reviews count with the decision `decide` would give
    them; with on_failure="fallback" and no `fallback`, they are left out. `base_counts` (TP, FP,
    FN of the GNN's fixed decisions outside the band) makes the maximised F1 that of the whole
    HyGRAIL decision on val instead of the routed subset alone."""
    labels = np.asarray(labels).astype(bool)
    if labels.shape != (len(results),):
        raise ValueError(f"labels has shape {labels.shape}, expected ({len(results)},)")
    ok, yes, conf = _verdicts(results)
    failed = _failure_decisions(ok, fallback, on_failure)
    tp0, fp0, fn0 = base_counts
    if failed is not None:
        fixed = ~ok & failed.astype(bool)
        tp0 += int((fixed & labels).sum())
        fp0 += int((fixed & ~labels).sum())
        fn0 += int((~ok & ~failed.astype(bool) & labels).sum())
    best_f1, best_gamma = -1.0, math.inf
    for gamma in [math.inf, *sorted(set(conf[yes].tolist()), reverse=True)]:
        pred = ok & yes & (np.nan_to_num(conf, nan=-1.0) >= gamma)
        tp = tp0 + int((pred & labels).sum())
        fp = fp0 + int((pred & ~labels).sum())
        fn = fn0 + int((ok & ~pred & labels).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best_f1:  # strict: among equal F1 the larger γ (visited first) stays
            best_f1, best_gamma = f1, gamma
    return float(best_gamma)
