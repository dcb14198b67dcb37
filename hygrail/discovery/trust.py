"""How far a reader may trust a discovery's list, stated on its page beside the list.

- Held-out precision of each region (``region_precision``): the split's test part decided exactly
  as ``task=run`` decides it (``pipeline.regions``: below a* rejected, above b* accepted, reviewed
  routed hypotheses by the LLM at γ, routed ones beyond the review budget by the GNN-only
  threshold), and per region the share of accepted test hypotheses that are true links. The test
  hypotheses the LLM reviews (``discover.review_budget.test``) are picked as discovery picks its
  validation reviews (``run.like_reviewed``: GNN scores nearest the reviewed candidates'), so the
  reviewed region's precision speaks for the slice of the band the candidates come from. These are
  precisions at the split's class ratio (1 positive per ``split.neg_ratio`` sampled negatives);
  among the candidates true links are far rarer, so the same decisions are less precise there.
- The reviewer on validation (``reviewer_figures``): how many validation positives γ was chosen on
  (a γ set on two positives is a guess), and the precision and acceptance rate of the LLM's
  decisions there; ``accept_warning`` when it accepts >= ``ACCEPT_WARNING`` of what it reviewed: a
  reviewer that accepts nearly everything filters nothing, and its "accepted" adds no information
  to the GNN's ranking.
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
