"""Decision thresholds chosen on validation, shared by every method that decides (paper §3.1's
GNN-only threshold; TSH, the structural baselines and the plus heads use the same rules, so a
sweep compares them under one ``routing.threshold``).

``f1_threshold``: the validation threshold maximising F1 (predict 1 iff s >= t), fixed for test.
``decision_threshold``: the threshold a ``routing.threshold`` rule asks for: ``max_f1`` (the paper's,
``f1_threshold``) or ``half_max_f1`` (half the validation max F1, on probability scores).
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import precision_recall_curve


def max_f1(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(best F1, its threshold t) over thresholds "predict 1 iff s >= t" on these scores.

    No positive label: F1 is 0 for every t; returns (0.0, +inf), i.e. predict nothing.
    Ties in F1: the lowest threshold (first in sklearn's ascending order)."""
    scores, labels = check_scores(scores, labels)
    if labels.sum() == 0:
        return 0.0, float("inf")
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    # The last (precision=1, recall=0) point has no threshold.
    p, r = precision[:-1], recall[:-1]
    f1 = np.divide(2 * p * r, p + r, out=np.zeros_like(p), where=(p + r) > 0)
    best = int(np.argmax(f1))
    return float(f1[best]), float(thresholds[best])


def f1_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """Validation threshold maximising F1; predict 1 iff score >= threshold (see ``max_f1``)."""
    return max_f1(scores, labels)[1]


THRESHOLD_RULES = ("max_f1", "half_max_f1")


def decision_threshold(scores: np.ndarray, labels: np.ndarray, rule: str = "max_f1") -> float:
    """The GNN-only decision threshold of ``routing.threshold``, from validation only.

    ``max_f1``: the paper's, the score where validation F1 peaks (``f1_threshold``).
    ``half_max_f1``: F1*/2 with F1* the validation max F1. For calibrated probabilities the
    F1-optimal threshold is half the optimal F1 (Lipton, Elkan & Narayanaswamy 2014, "Optimal
    thresholding of classifiers to maximize F1 measure"); the rule reads the curve's height, not
    where on a small validation set its peak happens to fall. Why it exists: with 19 validation
    positives (synthetic CHM-APL) the peak's location is one or two hypotheses, and the plus heads
    carried it to test badly (experiments/triage.md: test F1 below TSH's while the best test F1 any
    threshold reaches was above it). With large validation sets it does not pay (second KG, 145-320
    validation positives: F1 0.505 -> 0.502 for heteroconv_plus, 0.466 -> 0.454 for TSH), so it is
    an option, not the default. Scores must be probabilities in [0, 1]: the plus heads' and
    TSH's are (logistic regressions fit on validation); so are the paper backbones' sigmoids."""
    if rule == "max_f1":
        return f1_threshold(scores, labels)
    if rule != "half_max_f1":
        raise ValueError(f"routing.threshold={rule!r}; expected one of {', '.join(THRESHOLD_RULES)}")
    scores, labels = check_scores(scores, labels)
    if len(scores) and (scores.min() < 0 or scores.max() > 1):
        raise ValueError(f"routing.threshold=half_max_f1 needs probability scores in [0, 1]; got "
                         f"[{scores.min():.3g}, {scores.max():.3g}]")
    best, t = max_f1(scores, labels)
    return t if best == 0 else best / 2  # no positive: predict nothing, as max_f1 does


def check_scores(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores as float64 and 0/1 labels as int64, one of each per hypothesis (ValueError otherwise)."""
    scores = np.asarray(scores, dtype=np.float64).ravel()
    labels = np.asarray(labels).ravel()
    if scores.shape != labels.shape:
        raise ValueError(f"scores and labels differ in length: {scores.shape[0]} vs {labels.shape[0]}")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError("labels must be 0/1")
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    return scores, labels.astype(np.int64)
