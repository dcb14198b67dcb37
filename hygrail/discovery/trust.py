"""How far a reader may trust a discovery's list, stated on its page beside the list.

- Held-out precision of each region (``region_precision``): the split's test part decided exactly
  as ``task=run`` decides it (``pipeline.regions``: below a* rejected, above b* accepted, reviewed
  routed hypotheses by the LLM at γ, routed ones beyond the review budget by the GNN-only
  threshold), and per region the share of accepted test hypotheses that are true links. The test
  hypotheses the LLM reviews (``discover.review_budget.test``) are picked as discovery picks its
  validation reviews (``reviewing.like_reviewed``: GNN scores nearest the reviewed candidates'), so the
  reviewed region's precision speaks for the slice of the band the candidates come from. These are
  precisions at the split's class ratio (1 positive per ``split.neg_ratio`` sampled negatives);
  among the candidates true links are far rarer, so the same decisions are less precise there.
- The reviewer on validation (``reviewer_figures``): how many validation positives γ was chosen on
  (a γ set on two positives is a guess), and the precision and acceptance rate of the LLM's
  decisions there; ``accept_warning`` when it accepts >= ``ACCEPT_WARNING`` of what it reviewed: a
  reviewer that accepts nearly everything filters nothing, and its "accepted" adds no information
  to the GNN's ranking.
- The rule as fit (``untrusted``): γ = ∞ (or the combined rule's cut = ∞) is what validation
  chooses when accepting none of the reviewer's "yes" gives the best F1 (``calibrate._best_cut``
  visits +inf first and keeps it on ties): then the reviewer was not trusted, every reviewed
  candidate is rejected whatever it said, and the page says so in those words (``UNTRUSTED``)
  wherever a verdict or γ is shown (issue #36: cards showed "LLM review: yes, confidence 0.79"
  beside "verdict reject (LLM)" with no reason).
- Why a region's verdict may disagree with the GNN-only threshold (``gnn_reason``, ``band_note``):
  the band's b* is set by purity on validation, the threshold by max F1, and b* may lie below the
  threshold (on HPO cut at 2015: b* 0.2041 < threshold 0.2782), so a score between them is
  accepted above b* although the GNN-only decision rejects it; and the cuts were set on scores read
  from the training graph while the candidates are scored from the cut graph (more edges), so the
  same cut does not split the candidates as it split validation (``score_shift`` measures how much
  on validation non-links scored both ways). Each verdict says which rule gave it, with the numbers.
- The reviewer's training-data date (``llm.training_data_date``) against ``discover.cutoff``
  (``contamination``): a model trained on text from after the cutoff may have read the very links
  the retrospective evaluation counts as discoveries, so HyGRAIL's retrospective figures are then
  contaminated (the GNN's, TSH's and the structural rankings' are not: they read only the cutoff
  graph).
"""

from __future__ import annotations

import re

import numpy as np

from hygrail.kg import DataError
from hygrail.metrics import REGIONS

ACCEPT_WARNING = 0.9  # issue #28: a reviewer accepting >= 90% of what it sees is flagged on the page
REGION_TEXT = {"auto_accept": "above b* (accepted by the GNN)", "reviewed": "reviewed (LLM decision at γ)",
               "over_budget": "band, unreviewed (GNN-only decision)", "auto_reject": "below a* (rejected by the GNN)"}


UNTRUSTED = "the reviewer was not trusted on validation: its verdicts were not used"
SHIFT_SAMPLE = 2000  # validation non-links scored on both graphs (``score_shift``): at the 0.2-2.5 ms a pair
# measured for the plus backbones on the whole HPO graph (``scoring.GNNBlocks``), 0.4-5 s


def untrusted(fit) -> bool:
    """Whether the review rule as fit accepts nothing the reviewer says: γ = ∞, or a combined
    rule (``calibrate.Combined``) whose cut is ∞ (module docstring)."""
    if fit is None:
        return False
    cut = getattr(fit, "cut", fit)
    return bool(np.isinf(float(cut)))


def review_reason(result, fit, rule: str, score: float) -> str:
    """Why a reviewed candidate got its verdict: ``UNTRUSTED`` under an untrusted rule, else the
    rule's comparison (``calibrate.reason``)."""
    from hygrail.review import calibrate

    if untrusted(fit):
        return f"γ = ∞: {UNTRUSTED}; the rule rejects every reviewed candidate whatever it said"
    return calibrate.reason(result, fit, rule, score)


def gnn_reason(region: int, score: float, band, threshold: float) -> str:
    """Why the GNN decided a candidate it was not reviewed on: its region of the band (``route``: 1
    above b*, 0 below a*, -1 routed), with the numbers, and where the GNN-only threshold disagrees."""
    if region == 1:
        out = f"GNN: score {score:.4f} above b* {band.b:.4f}"
        return out + (f" (the band accepts it; the GNN-only threshold {threshold:.4f} applies only to "
                      f"unreviewed routed candidates)" if score < threshold else "")
    if region == 0:
        out = f"GNN: score {score:.4f} below a* {band.a:.4f}"
        return out + (f" (the band rejects it; the GNN-only threshold {threshold:.4f} applies only to "
                      f"unreviewed routed candidates)" if score >= threshold else "")
    gnn = "accept" if score >= threshold else "reject"
    return f"routed, beyond the review budget (GNN-only: {gnn}, score {score:.4f} vs threshold {threshold:.4f})"


# Why a band [a*, b*] with a* = b* routes nothing (``band_note``, and entities_only's facts).
EMPTY_BAND = ("empty: on validation one cut already leaves the purities the routing asks for on both sides "
              "(routing.m below a*, routing.n above b*), so no candidate is routed to the reviewer")


def band_note(band, threshold: float, shift: dict | None = None) -> str:
    """The page's sentence on how the band's cuts and the GNN-only threshold decide (module
    docstring), with ``score_shift``'s measurement when there is one."""
    out = (f"Outside the band the GNN decides: above b* = {band.b:.4f} accepted, below a* = {band.a:.4f} rejected, "
           f"without review; the GNN-only threshold ({threshold:.4f}, max F1 on validation) decides only routed "
           f"candidates beyond the review budget.")
    if band.a == band.b:
        out += f" The band is {EMPTY_BAND}, and HyGRAIL's decisions are the GNN's."
    if band.b < threshold:
        out += (f" b* lies below the threshold, so a score in ({band.b:.4f}, {threshold:.4f}) is accepted by the band "
                f"although the GNN-only decision would reject it.")
    elif band.a > threshold:
        out += (f" a* lies above the threshold, so a score in [{threshold:.4f}, {band.a:.4f}) is rejected by the band "
                f"although the GNN-only decision would accept it.")
    out += (" The cuts were set on validation scores read from the training graph; the candidates are scored from "
            "everything known (more edges)")
    if shift:
        n = int(shift["discover_shift_negatives"])
        out += (f": of {n:,} validation non-links, {shift['discover_shift_above_b_train']:.1%} score above b* on the "
                f"training graph and {shift['discover_shift_above_b_cut']:.1%} on the cut graph (median score "
                f"{shift['discover_shift_median_train']:.4f} -> {shift['discover_shift_median_cut']:.4f})")
    return out + ", so the region counts are approximate."


def score_shift(split, triage, gnn, band, seed: int, sample: int = SHIFT_SAMPLE) -> dict[str, float]:
    """``discover_shift_*``: up to ``sample`` validation non-links (seeded), scored on the training
    graph (``triage.scores.val``: what the band was set on) and on the cut graph (``gnn``: what the
    candidates are scored on); the share above b* and the median score each way. Non-links are
    non-edges of both graphs, so the two scores differ only by the graph read (module docstring)."""
    val = split.part("val")
    neg = np.flatnonzero(val["label"].to_numpy() == 0)
    if not len(neg):
        return {}
    pick = np.sort(np.random.default_rng(seed).permutation(neg)[:sample])
    src, dst = val["src"].to_numpy()[pick].astype(np.int64), val["dst"].to_numpy()[pick].astype(np.int64)
    train, cut = np.asarray(triage.scores.val)[pick], gnn.probability(gnn.pairs(src, dst))
    return {"discover_shift_negatives": float(len(pick)),
            "discover_shift_above_b_train": float(np.mean(train > band.b)),
            "discover_shift_above_b_cut": float(np.mean(cut > band.b)),
            "discover_shift_median_train": float(np.median(train)), "discover_shift_median_cut": float(np.median(cut))}


def region_precision(split, triage, picked: np.ndarray | None = None, llm: np.ndarray | None = None) -> dict[str, float]:
    """``trust_test_<region>_{n,positives,accepted,tp,precision}`` on the split's test part
    (module docstring); ``picked``: indices of the test hypotheses the LLM reviewed, ``llm``: its
    decisions on them (none reviewed: the whole band keeps the GNN-only decision). Precision is NaN
    where a region accepts nothing."""
    from hygrail.pipeline import regions

    y = split.part("test")["label"].to_numpy()
    route = triage.route_test
    picked = np.zeros(0, dtype=np.int64) if picked is None else np.asarray(picked, dtype=np.int64)
    final = np.where(route == -1, (triage.scores.test >= triage.threshold).astype(int), route).astype(int)
    if len(picked):
        final[picked] = llm
    region = regions(route, picked)
    out = {}
    for name in REGIONS:
        sel = region == name
        accepted = sel & (final == 1)
        tp = int((accepted & (y == 1)).sum())
        out |= {f"trust_test_{name}_n": float(sel.sum()), f"trust_test_{name}_positives": float((sel & (y == 1)).sum()),
                f"trust_test_{name}_accepted": float(accepted.sum()), f"trust_test_{name}_tp": float(tp),
                f"trust_test_{name}_precision": tp / accepted.sum() if accepted.any() else float("nan")}
    return out


def reviewer_figures(part: str, labels: np.ndarray, decisions: np.ndarray) -> dict[str, float]:
    """``reviewer_<part>_{reviewed,positives,accepted,tp,precision,accept_rate}`` of the LLM's decisions
    on the hypotheses of a split part it reviewed."""
    y, dec = np.asarray(labels, dtype=int), np.asarray(decisions, dtype=int)
    acc, tp = int(dec.sum()), int(((dec == 1) & (y == 1)).sum())
    return {f"reviewer_{part}_reviewed": float(len(y)), f"reviewer_{part}_positives": float(y.sum()),
            f"reviewer_{part}_accepted": float(acc), f"reviewer_{part}_tp": float(tp),
            f"reviewer_{part}_precision": tp / acc if acc else float("nan"),
            f"reviewer_{part}_accept_rate": acc / len(y) if len(y) else float("nan")}


def accept_warning(metrics: dict) -> str | None:
    """The page's warning when the reviewer accepted >= ``ACCEPT_WARNING`` of all it reviewed
    (validation, test and candidates together), or None."""
    seen = sum(metrics.get(k, 0.0) for k in ("reviewer_val_reviewed", "reviewer_test_reviewed", "discover_reviewed"))
    accepted = sum(metrics.get(k, 0.0) for k in ("reviewer_val_accepted", "reviewer_test_accepted", "discover_llm_accepted"))
    if not seen or accepted < ACCEPT_WARNING * seen:
        return None
    return (f"The reviewer accepted {int(accepted)} of the {int(seen)} hypotheses it reviewed ({accepted / seen:.0%}, "
            f">= {ACCEPT_WARNING:.0%}): a reviewer that accepts nearly everything filters nothing; read its "
            f"'accept' as the GNN's ranking, not as a second opinion.")


def training_year(value) -> int | None:
    """The year of ``llm.training_data_date`` (YYYY, YYYY-MM or YYYY-MM-DD), None when 'unknown'
    or unset; a one-line DataError for anything else."""
    if value is None or str(value).strip().lower() == "unknown":
        return None
    m = re.fullmatch(r"(\d{4})(-\d{2}){0,2}", str(value).strip())
    if m is None:
        raise DataError(f"llm.training_data_date={value!r}: expected a year (2024), a month (2024-09), a day "
                        f"(2024-09-18) or unknown")
    return int(m.group(1))


def contamination(llm_name: str, training_date, cutoff: int | None, reviews: int) -> str | None:
    """The warning when a reviewer whose training data are later than ``cutoff`` reviewed
    something in a retrospective run (module docstring), or None."""
    year = training_year(training_date)
    if cutoff is None or year is None or year <= cutoff or reviews == 0:
        return None
    return (f"Reviewer {llm_name} was trained on data up to {training_date}, after discover.cutoff={cutoff}: its "
            f"{reviews} reviews may draw on the very links found after the cutoff, so HyGRAIL's retrospective "
            f"figures are contaminated (the GNN's, TSH's and the structural rankings' read only the cutoff graph). "
            f"Use a reviewer whose training data end by {cutoff}.")
