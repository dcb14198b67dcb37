"""Discovery (``task=discover``): new hypotheses of a relation, with evidence cards for people.

The trained triage GNN scores every unobserved typed pair of the relation (``space``: the
candidate space walked in blocks, ``scoring``: exact or two-stage scoring, TSH and preferential
attachment), the band's routed head is reviewed by the LLM with graph evidence (``reviewing``, the
reviewing stage of ``task=run``), ``ranked`` orders the table and builds each row's card, and
``cards`` renders it as an offline HTML report and a Markdown version (``report`` writes the folder
and the MLflow run). With ``discover.cutoff`` the graph is cut at a year and ``rankings`` scores
every ranking against the edges found after it on ``retro``'s grid (Science4Cast's horizons, degrees
and counts); ``novelty`` says whether a list finds anything beyond the hubs, ``trust`` what the page
tells a reader about how far to trust it. ``run`` composes them.
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from hygrail.kg import DataError

KS = (10, 50, 100, 500, 1000)  # precision@K / recall@K list sizes unless discover.ks says otherwise
ORDERS = ("paper", "reviewed")  # discover.order: which HyGRAIL list the report shows and scores (``retro``)


def options(cfg: DictConfig) -> dict:
    """``discover.*`` checked, with one-line errors naming the option."""
    d = OmegaConf.to_container(cfg.discover, resolve=True)
    top_k = d.get("top_k")
    if not isinstance(top_k, int) or top_k < 1:
        raise DataError(f"discover.top_k={top_k}: expected a positive number of hypotheses to keep")
    budget = d.get("review_budget") or {}
    for part in ("val", "candidates", "test"):
        v = budget.get(part)
        if part != "candidates" and v is None:
            continue
        if not isinstance(v, int) or v < 0:
            raise DataError(f"discover.review_budget.{part}={v}: expected a number of reviews >= 0"
                            + (f" (or null for every routed {part} hypothesis)" if part != "candidates" else ""))
    short = d.get("shortlist")
    if not (short is None or short == "auto" or (isinstance(short, int) and short >= top_k)):
        raise DataError(f"discover.shortlist={short}: expected null (exact), auto, or a shortlist size >= "
                        f"discover.top_k={top_k}")
    order = d.get("order", "paper")
    if order not in ORDERS:
        raise DataError(f"discover.order={order!r}: expected one of {', '.join(ORDERS)}")
    cutoff = d.get("cutoff")
    if cutoff is not None and not isinstance(cutoff, int):
        raise DataError(f"discover.cutoff={cutoff!r}: expected a year (an integer) or null")
    if not isinstance(d.get("entity_lists", False), bool):
        raise DataError(f"discover.entity_lists={d.get('entity_lists')!r}: expected true or false")
    n = d.get("entity_lists_shortlist", 0)
    if d.get("entity_lists") and (not isinstance(n, int) or n < d.get("entity_k", 1)):
        raise DataError(f"discover.entity_lists_shortlist={n!r}: expected a number of candidates per entity >= "
                        f"discover.entity_k={d.get('entity_k')}")
    only = d.get("entities_only", False)
    if not isinstance(only, bool):
        raise DataError(f"discover.entities_only={only!r}: expected true or false")
    if only and not d.get("entities"):
        raise DataError("discover.entities_only=true: expected some discover.entities to rank (none are named)")
    if only and (cutoff is not None or d.get("entity_lists")):
        what = f"discover.cutoff={cutoff}" if cutoff is not None else "discover.entity_lists=true"
        raise DataError(f"discover.entities_only=true with {what}: that needs the walk over the whole space "
                        f"entities_only skips; drop one of them")
    from hygrail.discovery.pools import VARIANTS as LTR
    from hygrail.discovery.stack import VARIANTS

    rankers = ("gnn", *(f"stack_{v}" for v in VARIANTS), "ltr")
    if d.get("entity_ranker", "gnn") not in rankers:
        raise DataError(f"discover.entity_ranker={d.get('entity_ranker')!r}: expected one of {', '.join(rankers)}")
    ltr = d.get("ltr") or []
    if not isinstance(ltr, list) or any(v not in LTR for v in ltr):
        raise DataError(f"discover.ltr={ltr!r}: expected a list of the per-entity ranker's variants, some of "
                        f"{', '.join(LTR)} (or [])")
    if d.get("entity_ranker") == "ltr" and not ltr:
        raise DataError("discover.entity_ranker=ltr chooses among the GNN, the stack and the per-entity ranker's "
                        "variants: expected some discover.ltr (e.g. [ltr, ltr_no_text])")
    threads = d.get("threads")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise DataError(f"discover.threads={threads!r}: expected a number of threads >= 1, or null for the job's threads")
    ks = sorted(int(k) for k in d.get("ks") or KS)
    if ks[0] < 1:
        raise DataError(f"discover.ks={ks}: expected positive list sizes")
    evaluation(d)
    from hygrail.discovery.trust import training_year

    training_year(cfg.llm.get("training_data_date"))
    return d | {"ks": ks, "order": order, "seed": int(cfg.seed)}


# The retrospective grid and the novelty view (retro, novelty): option -> (least value, what it is).
GRID = {"horizons": (1, "years after the cutoff"), "min_degrees": (0, "degrees"), "min_counts": (1, "reference counts")}
NOVELTY = {"distance_cap": (2, "a path length"), "degree_buckets": (1, "a number of buckets")}


def evaluation(d: dict) -> None:
    """One-line errors for the retrospective grid and the novelty view's options."""
    for key, (least, what) in GRID.items():
        v = d.get(key)
        if not isinstance(v, list) or not v or not all(isinstance(x, int) and x >= least for x in v):
            raise DataError(f"discover.{key}={v}: expected a non-empty list of {what} >= {least}")
    for key, (least, what) in NOVELTY.items():
        if not isinstance(d.get(key), int) or d[key] < least:
            raise DataError(f"discover.{key}={d.get(key)}: expected {what} >= {least}")
    beta, pct = d.get("novelty_beta"), d.get("hub_percentile")
    if not isinstance(beta, (int, float)) or not 0 <= beta <= 1:
        raise DataError(f"discover.novelty_beta={beta}: expected a weight in [0, 1]")
    if not isinstance(pct, (int, float)) or not 0 < pct <= 100:
        raise DataError(f"discover.hub_percentile={pct}: expected a percentile in (0, 100]")
