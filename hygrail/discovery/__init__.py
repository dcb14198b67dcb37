"""Discovery (``task=discover``): new hypotheses of a relation, with evidence cards for people.

The trained triage GNN scores every unobserved typed pair of the relation (``space``: the
candidate space walked in blocks, ``scoring``: exact or two-stage scoring, TSH and preferential
attachment), the band's routed head is reviewed by the LLM with graph evidence (the reviewing
stage of ``task=run``), and ``cards`` writes the ranked table, an offline HTML report and a
Markdown version. With ``discover.cutoff`` the graph is cut at a year and ``retro`` scores the
rankings against the edges found after it. ``run`` composes them.
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from hygrail.kg import DataError

KS = (10, 50, 100, 500, 1000)  # precision@K / recall@K list sizes unless discover.ks says otherwise


def options(cfg: DictConfig) -> dict:
    """``discover.*`` checked, with one-line errors naming the option."""
    d = OmegaConf.to_container(cfg.discover, resolve=True)
    top_k = d.get("top_k")
    if not isinstance(top_k, int) or top_k < 1:
        raise DataError(f"discover.top_k={top_k}: expected a positive number of hypotheses to keep")
    budget = d.get("review_budget") or {}
    for part in ("val", "candidates"):
        v = budget.get(part)
        if part == "val" and v is None:
            continue
        if not isinstance(v, int) or v < 0:
            raise DataError(f"discover.review_budget.{part}={v}: expected a number of reviews >= 0"
                            + (" (or null for every routed validation hypothesis)" if part == "val" else ""))
    short = d.get("shortlist")
    if not (short is None or short == "auto" or (isinstance(short, int) and short >= top_k)):
        raise DataError(f"discover.shortlist={short}: expected null (exact), auto, or a shortlist size >= "
                        f"discover.top_k={top_k}")
    cutoff = d.get("cutoff")
    if cutoff is not None and not isinstance(cutoff, int):
        raise DataError(f"discover.cutoff={cutoff!r}: expected a year (an integer) or null")
    ks = sorted(int(k) for k in d.get("ks") or KS)
    if ks[0] < 1:
        raise DataError(f"discover.ks={ks}: expected positive list sizes")
    return d | {"ks": ks}
