"""Paper §3.1 decisions on GNN scores: the GNN-only threshold and HyGRAIL's purity band.

``f1_threshold``: the validation threshold maximising F1 (predict 1 iff s >= t), fixed for test.

``purity_interval``: the band [a*, b*] of ambiguous scores. For a lower cut a, the negative
purity is the fraction of negatives among validation hypotheses with s < a; for an upper cut b,
the positive purity is the fraction of positives among those with s > b. Among all a <= b with
negative purity >= m and positive purity >= n, the band routes the fewest validation
hypotheses (those with a <= s <= b).

Exact solution in O(N log N). Sort the validation scores and group equal scores (a cut never
separates ties: s < a takes all or none of a group). With K distinct values u_1 < ... < u_K, the
set below any a is the first k groups for some k in 0..K, the set above any b the last j groups,
and a <= b is possible exactly when the two sets are disjoint, i.e. k + j <= K (for k + j = K
pick a = b strictly between u_k and u_{k+1}). An empty side has no purity to meet and is always
allowed (it predicts nothing). So the band maximises P(k) + S(j) (hypotheses in the first k / last
j groups) over allowed k, j with k + j <= K: for each allowed k take the largest allowed
j <= K - k (S grows with j), via a running maximum, O(K) after the sort.

Why a* <= b* needs the joint search: the largest allowed k and the largest allowed j can overlap
(k + j > K) whenever m is at most the overall negative rate or n at most the positive rate (e.g.
m = 0.9 with 1:20 negatives: "everything below" is already 95% pure). Choosing the two cuts
independently would then give a* > b*; the joint maximisation above rules it out by construction.

Placing the cuts (validation only fixes which groups lie outside): a* = the smallest routed
validation score and b* = the largest one, i.e. the tightest interval around the routed
validation hypotheses. Edge cases, all documented in ``Band``:
- nothing below is predicted (k = 0, e.g. no a reaches purity m): a* = -inf, so everything under
  b* is routed; likewise j = 0 gives b* = +inf. ``feasible_a``/``feasible_b`` say whether any
  non-empty side reached its purity at all.
- nothing routed on validation (k + j = K, both sides non-empty): a* = b* = midpoint of the gap
  between u_k and u_{k+1}; if one side is empty, the other side's cut sits just beyond the
  validation range (so test scores outside it are routed rather than decided without evidence).
- ties between optima (same number routed): the largest k wins (widest confident-negative region).
- all-negative validation: no upper side is ever pure (for n > 0), so j = 0, b* = +inf; the
  lower side takes every group (k = K), a* = just above the largest validation score.
- empty validation: ValueError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
from sklearn.metrics import precision_recall_curve


def max_f1(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(best F1, its threshold t) over thresholds "predict 1 iff s >= t" on these scores.

    No positive label: F1 is 0 for every t; returns (0.0, +inf), i.e. predict nothing.
    Ties in F1: the lowest threshold (first in sklearn's ascending order)."""
    scores, labels = _check(scores, labels)
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


@dataclass(frozen=True)
class Band:
    """Predict 0 if s < a, 1 if s > b, route to the LLM if a <= s <= b.

    a = -inf when nothing is predicted negative, b = +inf when nothing is predicted positive.
    feasible_a / feasible_b: whether some non-empty lower / upper validation side reached purity
    m / n (False means that side's purity cannot be met: everything on it is routed)."""

    a: float
    b: float
    feasible_a: bool
    feasible_b: bool


def purity_interval(scores: np.ndarray, labels: np.ndarray, m: float, n: float) -> Band:
    """The band of paper §3.1 routing the fewest validation hypotheses (module docstring)."""
    scores, labels = _check(scores, labels)
    if not (0.0 <= m <= 1.0 and 0.0 <= n <= 1.0):
        raise ValueError(f"purity parameters must lie in [0, 1], got m={m}, n={n}")
    if len(scores) == 0:
        raise ValueError("purity_interval: empty validation scores")
    values, group, counts = np.unique(scores, return_inverse=True, return_counts=True)  # group: per hypothesis
    pos_per_group = np.bincount(group, weights=labels, minlength=len(values))
    big_k = len(values)

    # below[k] / above[j]: hypotheses in the first k / last j groups (k, j = 0..K), and their negatives / positives.
    below = np.concatenate([[0], np.cumsum(counts)])
    above = np.concatenate([[0], np.cumsum(counts[::-1])])
    neg_below = below - np.concatenate([[0], np.cumsum(pos_per_group)])
    pos_above = np.concatenate([[0], np.cumsum(pos_per_group[::-1])])
    # purity >= m written as negatives >= m * total: no division, and no 0/0 for an empty side.
    ok_k = neg_below >= m * below
    ok_j = pos_above >= n * above
    ok_k[0] = ok_j[0] = True  # an empty side predicts nothing and is always allowed

    # best_j[t] = largest allowed j <= t (j = 0 is always allowed).
    best_j = np.maximum.accumulate(np.where(ok_j, np.arange(big_k + 1), 0))
    ks = np.flatnonzero(ok_k)
    js = best_j[big_k - ks]
    covered = below[ks] + above[js]
    pick = len(ks) - 1 - int(np.argmax(covered[::-1]))  # ties: the largest k
    k, j = int(ks[pick]), int(js[pick])

    a, b = _cuts(values, k, j)
    return Band(a, b, feasible_a=bool(ok_k[1:].any()), feasible_b=bool(ok_j[1:].any()))


def calibrate_band(scores: np.ndarray, labels: np.ndarray, cfg: Mapping) -> Band:
    """The band a ``conf/routing/*.yaml`` config asks for, from validation scores and labels only
    (``default``: the paper's fixed purities m, n)."""
    return purity_interval(scores, labels, float(cfg["m"]), float(cfg["n"]))


def _cuts(values: np.ndarray, k: int, j: int) -> tuple[float, float]:
    """Real cuts a <= b putting exactly the first k groups below a and the last j above b."""
    big_k = len(values)
    a = -np.inf if k == 0 else (values[k] if k < big_k else np.nextafter(values[-1], np.inf))
    b = np.inf if j == 0 else (values[big_k - j - 1] if j < big_k else np.nextafter(values[0], -np.inf))
    if 0 < k and 0 < j and k + j == big_k:  # nothing routed on validation: cut inside the gap
        a = b = (values[k - 1] + values[k]) / 2
    return float(a), float(b)


def route(scores: np.ndarray, band: Band) -> np.ndarray:
    """Three-way decision per hypothesis: 0 (s < a), 1 (s > b), -1 (routed to the LLM)."""
    s = np.asarray(scores, dtype=np.float64)  # cuts are float64; float32 compares could round them
    out = np.full(s.shape, -1, dtype=np.int8)
    out[s < band.a] = 0
    out[s > band.b] = 1
    return out


def _check(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=np.float64).ravel()
    labels = np.asarray(labels).ravel()
    if scores.shape != labels.shape:
        raise ValueError(f"scores and labels differ in length: {scores.shape[0]} vs {labels.shape[0]}")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError("labels must be 0/1")
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    return scores, labels.astype(np.int64)
