"""Paper §3.1 on GNN scores: HyGRAIL's purity band (the GNN-only decision threshold is a shared
concept, ``hygrail.thresholds``: TSH and the structural baselines choose theirs by the same rules).

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

``calibrate_band`` is where a run's band is chosen (``conf/routing/*.yaml``), from validation only:
- ``rule: fixed`` (``routing=default``, the paper tables): the configured m, n.
- ``rule: auto`` (``routing=auto``): m, n from the validation base rate pi (positive share) by
  ``auto_purities``: below a*, positives may occur at most at ``neg_factor`` times the base rate
  (m = 1 - neg_factor * pi); above b*, negatives at most at ``pos_factor`` times their base rate
  (n = 1 - pos_factor * (1 - pi)). The defaults 0.1 / 0.1 (a convention, not fitted) let each
  auto-decided side hold the wrong class at most at a tenth of that class's base-rate share: below
  a* that is a likelihood ratio of ~10 for "negative" (the usual bar for "strong" evidence); above
  b* the same tenth is stricter in odds (at 1:20 posterior odds 9.5 against prior odds 1/20, a ratio
  of ~190): at 1:20 (pi = 1/21) m = 0.995, n = 0.905; at 1:4 m = 0.98, n = 0.92. The paper-tuned 0.985 / 0.5
  (``routing=default``) is factors 0.31 / 0.52: it lets the auto-negative side hold a third of the
  base rate of positives, which with a good GNN is a third of all positives lost before review
  (measured: bench_triage.py, routing columns), and accepts unreviewed hypotheses at 50% precision.
- ``max_call_rate`` c (either rule; absent or 1 = no cap): when the purity band routes more than
  a share c of validation, the band becomes ``capped_window``: among all bands routing at most
  floor(c * N) validation hypotheses, the one whose auto-decided sides make the fewest validation
  errors (positives below a*, negatives above b*), i.e. the share c of the most ambiguous cases,
  those the GNN alone would get wrong. ``Band.capped`` records that the cap was binding.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np

from hygrail.thresholds import check_scores


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
    m: float = 0.0  # negative purity target used (configured, or from the auto rule)
    n: float = 0.0  # positive purity target used
    max_call_rate: float = 1.0  # cap on the share of validation routed (1.0: no cap)
    capped: bool = False  # the purity band routed more than the cap: the band is capped_window's
    uncapped_val_share: float = 0.0  # share of validation the purity band alone routes


def purity_interval(scores: np.ndarray, labels: np.ndarray, m: float, n: float) -> Band:
    """The band of paper §3.1 routing the fewest validation hypotheses (module docstring)."""
    scores, labels = check_scores(scores, labels)
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
    routed = (len(scores) - below[k] - above[j]) / len(scores)
    return Band(a, b, bool(ok_k[1:].any()), bool(ok_j[1:].any()), m=m, n=n, uncapped_val_share=float(routed))


def auto_purities(base_rate: float, neg_factor: float = 0.1, pos_factor: float = 0.1) -> tuple[float, float]:
    """(m, n) from the validation positive share (module docstring, ``rule: auto``)."""
    if not 0.0 <= base_rate <= 1.0:
        raise ValueError(f"base rate must lie in [0, 1], got {base_rate}")
    if not (0.0 <= neg_factor <= 1.0 and 0.0 <= pos_factor <= 1.0):
        raise ValueError(f"routing.neg_factor / pos_factor must lie in [0, 1], got {neg_factor}, {pos_factor}")
    return 1.0 - neg_factor * base_rate, 1.0 - pos_factor * (1.0 - base_rate)


def capped_window(scores: np.ndarray, labels: np.ndarray, max_call_rate: float) -> tuple[float, float]:
    """Cuts (a, b) routing at most floor(max_call_rate * N) validation hypotheses whose outside
    decisions (0 below a, 1 above b) make the fewest validation errors. Ties: the most routed (the
    budget is spent: a window that just covers validation's errors would leave test's outside),
    then the most positives inside (the reviewer can only confirm positives it is shown; they are
    the rare class), then the lowest window. O(N log N): for each number k of score groups below, the best window
    extends as far up as the cap allows (errors above only fall as it grows)."""
    scores, labels = check_scores(scores, labels)
    if len(scores) == 0:
        raise ValueError("capped_window: empty validation scores")
    values, group, counts = np.unique(scores, return_inverse=True, return_counts=True)
    pos = np.bincount(group, weights=labels, minlength=len(values))
    big_k, budget = len(values), int(np.floor(max_call_rate * len(scores) + 1e-9))
    start = np.concatenate([[0], np.cumsum(counts)])  # hypotheses in the first k groups
    pos_below = np.concatenate([[0], np.cumsum(pos)])
    neg_below = start - pos_below
    # end[k]: the most groups k..end-1 that fit the budget (end >= k: an empty window always fits).
    end = np.searchsorted(start, start + budget, side="right") - 1
    end = np.clip(end, np.arange(big_k + 1), big_k)
    errors = pos_below + (neg_below[-1] - neg_below[end])
    routed = start[end] - start
    inside = pos_below[end] - pos_below
    k = int(np.lexsort((-inside, -routed, errors))[0])
    return _cuts(values, k, big_k - int(end[k]))


def calibrate_band(scores: np.ndarray, labels: np.ndarray, cfg: Mapping) -> Band:
    """The band a ``conf/routing/*.yaml`` config asks for, from validation scores and labels only
    (module docstring: ``rule`` fixed | auto, optional ``max_call_rate``)."""
    rule = cfg.get("rule", "fixed")
    if rule == "fixed":
        m, n = float(cfg["m"]), float(cfg["n"])
    elif rule == "auto":
        y = np.asarray(labels)
        m, n = auto_purities(float(y.mean()) if len(y) else 0.0, float(cfg.get("neg_factor", 0.1)),
                             float(cfg.get("pos_factor", 0.1)))  # fmt: skip
    else:
        raise ValueError(f"routing.rule={rule!r}; expected fixed or auto")
    cap = 1.0 if cfg.get("max_call_rate") is None else float(cfg["max_call_rate"])
    if not 0.0 <= cap <= 1.0:
        raise ValueError(f"routing.max_call_rate={cap}; expected a share in [0, 1]")
    band = purity_interval(scores, labels, m, n)
    band = replace(band, max_call_rate=cap)
    if band.uncapped_val_share <= cap:
        return band
    a, b = capped_window(scores, labels, cap)
    return replace(band, a=a, b=b, capped=True)


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
