"""``task=discover``: the job HyGRAIL is named for, composed from the stages of ``task=run``.

    KG (<= cutoff) -> split (calibration) -> triage of ALL unobserved pairs (streamed, top-K)
      -> band regions -> reviewing stage on the routed head (``discover.order=paper``) or on the
         GNN's head (``reviewed``) -> ranked table + HTML cards in that order
      -> (cutoff given) AUC, AP and precision@K against the edges dated after it (``retro``'s grid)

The GNN, its threshold, the band [a*, b*] and gamma come from the split's validation part exactly
as in ``task=run`` (``stages.gnn_stage``, ``stages.val_gamma``: the same cached model and
replies); nothing is tuned on the candidates.

Which graph each stage reads (DESIGN.md, fourth wave). With a cutoff there are three: the *training
graph* (the split's train edges), the *cut graph* (everything known at the cutoff: ``KG.until``)
and the full graph (only for the answers, ``retro.future_edges``); without one the cut graph is the
whole KG.

- training graph: training the GNN, its validation scores, the threshold, the band and gamma, TSH's
  validation fit, and the validation/test hypotheses' evidence for the reviewer (there the held-out
  links are not edges);
- cut graph: every ranking that is scored or listed. The GNN passes messages and reads its pair
  features over it (``load_scorer(graph=...)``), and so do TSH's descriptors, every heuristic and
  learned baseline of the retrospective tables, the per-entity lists, the candidates' evidence
  (the reviewer's and the cards'), and the novelty view. The split's validation and test positives
  are edges of it, so they are not candidates.

Calibration thresholds were set on scores read from the training graph, so the same threshold on
cut-graph scores is an approximation (degrees are ~1/0.7 larger); the band's counts on the page are
reported as such, with how far the cut graph moves validation non-links past b*
(``trust.score_shift``), and no figure of the retrospective depends on them. Every verdict on the
page names the rule that gave it with its numbers (``verdict_of``): b* may lie below the GNN-only
threshold, and γ = ∞ means the reviewer was not trusted (``trust``'s module docstring). The
per-entity sections get the ranked table's cards (``entity_cards``, ``card_records``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np
import polars as pl
import torch
from omegaconf import DictConfig, OmegaConf
from threadpoolctl import threadpool_limits

from hygrail.data import CONF, load_kg
from hygrail.discovery import compositions, entities, first_answer, options, rerank, stack
from hygrail.discovery.cards import COLUMNS, listed_moves, write_html, write_markdown, write_table
from hygrail.discovery.novelty import distances, hub_pairs, novelty_scores
from hygrail.discovery.retro import (Retrospective, answers, check_cutoff, degree_mask, future_edges, margins,
                                     hygrail_order, paired_precision, retrospective, reviewed_order)
from hygrail.discovery.scoring import REGION_NAMES, GNNBlocks, PreferentialAttachment, TSHBlocks, two_stage, walk
from hygrail.discovery.space import CandidateSpace, tiebreak
from hygrail.discovery.trust import (EMPTY_BAND, REGION_TEXT, UNTRUSTED, accept_warning, band_note, contamination,
                                     gnn_reason, region_precision, review_reason, reviewer_figures, score_shift,
                                     untrusted)
from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.kg import KG, DataError
from hygrail.stages import build_split, gnn_stage, hypotheses, llm_config, plain, reviewer_for, val_gamma
from hygrail.review import calibrate
from hygrail.review.stage import check_failures, decide, fallback_note
from hygrail.triage.routing import Band, route

log = logging.getLogger("hygrail.discovery")

# Rankings of the retrospective evaluation, in the order the tables list them (key: MLflow's retro_<key>_*).
METHODS = {"gnn": "GNN", "hygrail": "HyGRAIL", "tsh": "TSH", "pa": "Preferential attachment", "cn": "Common neighbours",
           "paths3": "3-paths", "novelty": "GNN novelty-aware", "degree_adjusted": "GNN degree-adjusted"}


@dataclass
class Discovery:
    table: pl.DataFrame  # the ranked hypotheses (cards.COLUMNS)
    metrics: dict[str, float]
    out: Path  # where the report was written
    summary: dict
    retro: Retrospective | None = None  # the rankings scored against the future edges (cutoff only)
    curves: dict[str, np.ndarray] = field(default_factory=dict)  # precision@k, k = 1..max(ks)
    space: CandidateSpace | None = None  # the candidates (on the graph known by the cutoff)
    graph: object = None  # the cut graph: what every ranking, list and candidate's evidence read
    entities: entities.EntityReport | None = None  # discover.entities' lists, the per-entity retrospective
    lists: pl.DataFrame | None = None  # discover.entity_lists: every source entity's best entity_k


@dataclass(frozen=True)
class Pairs:
    """Candidate pairs with their ranking scores (the GNN's logits), best first: what is reviewed."""

    src: np.ndarray
    dst: np.ndarray
    score: np.ndarray


def default_out(cfg: DictConfig) -> Path:
    d = cfg.discover
    if d.out:
        return Path(str(d.out))
    if d.get("entities_only"):  # no review: the reviewer and its evidence take no part in the name
        return Path(cfg.paths.outputs) / "discover" / str(cfg.relation.name) / f"{cfg.backbone.name}-seed{cfg.seed}-entities"
    name = f"{cfg.backbone.name}-{cfg.llm.name}-{cfg.evidence.mode}-seed{cfg.seed}"
    name += f"-cutoff{d.cutoff}" if d.cutoff is not None else ""
    name += "-reviewed" if d.get("order", "paper") == "reviewed" else ""  # beside the paper order's report
    return Path(cfg.paths.outputs) / "discover" / str(cfg.relation.name) / name


@contextlib.contextmanager
def threads(n: int):
    """torch and OpenMP (sklearn's trees) at ``n`` threads inside, as they were after."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(n, user_api="openmp"):
            yield
    finally:
        torch.set_num_threads(before)


def discover(cfg: DictConfig, logger=None) -> Discovery:
    """The discovery of one config (module docstring); ``logger``: a Lightning logger receiving the
    triage training curves (if it trains). Training runs at the job's ``threads``, the rest at
    ``discover.threads``."""
    d = options(cfg)
    with threads(d.get("threads") or int(cfg.threads)):
        return _discover(cfg, d, logger)


def _discover(cfg: DictConfig, d: dict, logger=None) -> Discovery:
    seed, top_k, cutoff = int(cfg.seed), int(d["top_k"]), d.get("cutoff")
    timer = {}
    t0 = time.perf_counter()
    keep = (lambda whole: sample_keep(whole, cfg.relation.name, cutoff, d)) \
        if cfg.data.get("subgraph_nodes") and d.get("entities") else None  # a sample holds what is asked about
    kg = load_kg(plain(cfg.data), cutoff=cutoff, keep=keep)
    relation = kg.schema.relation(cfg.relation.name)
    if cutoff is not None:
        check_cutoff(kg, relation, cutoff)
        known = kg.until(cutoff)
    else:
        known = kg
    space = CandidateSpace(known, relation)
    given, new = compositions.options(d, space)  # formulas the graph lacks: new compositions
    wanted = entities.options(d | {"entities": given}, space)  # before any training: a misspelt entity fails in seconds
    compositions.check_backbone(plain(cfg.backbone), new)
    short = d.get("shortlist")
    exact = short is None or (short == "auto" and space.size <= int(d["exact_max_pairs"]))
    if cutoff is not None and not exact:
        raise DataError(f"discover.cutoff={cutoff} with discover.shortlist={short}: retrospective evaluation ranks "
                        f"every candidate exactly; set discover.shortlist=null")
    try:
        _, split = build_split(cfg, known)
    except DataError as e:  # e.g. too few edges known by an early cutoff to split
        raise DataError(f"discover.cutoff={cutoff}: {e}" if cutoff is not None else str(e)) from None
    cache = Path(cfg.paths.cache)
    if d.get("first_answer") and d.get("entities_only") and wanted and \
            not first_answer.model_cached(split, cfg.backbone, seed, cache / "triage"):
        report, m = first_answer.lists(d, split, space, wanted, cfg.backbone, seed, cache)
        early = entities_only(cfg, space, None, None, m, {"prepare": time.perf_counter() - t0}, lambda future: report,
                              pending=len(new))
        print(f"first answer (the stack without the GNN, {m['first_answer_seconds']:.0f} s): "
              f"{write_report(early).resolve() / 'index.html'}; training the GNN now, the page is rewritten when it is "
              f"done (stopping here keeps this page; the same command goes on with the training)", flush=True)
    with threads(int(cfg.threads)):  # the model depends on the thread count (conf/discover/default.yaml)
        triage, metrics, _ = gnn_stage(cfg, known, split, logger)
    from hygrail.triage.train import load_scorer

    scorer = load_scorer(split, plain(cfg.backbone), seed, Path(cfg.paths.cache) / "triage", int(d["encode_edges"]),
                         graph=known)
    band = Band(triage.band[0], triage.band[1], True, True)  # clipped cuts route exactly as the infinite ones
    gnn = GNNBlocks(scorer, space)
    timer["prepare"] = time.perf_counter() - t0
    fitted, by = None, d.get("entity_ranker", "gnn")
    ranks_by = by.removeprefix("stack_") if by != "gnn" and wanted else None  # the stack variant ordering the lists
    retro_variants = [] if d.get("entities_only") else list(d.get("stack") or [])
    variants = list(dict.fromkeys(retro_variants + ([ranks_by] if ranks_by else [])))
    if variants:  # the stacked head, fit on the split's held-out transitions (hygrail/discovery/stack.py)
        t0 = time.perf_counter()
        compatible = d.get("compatible") if (d.get("compatible") or {}).get("via") else None
        fitted, hit = stack.fit_cached(Path(cfg.paths.cache) / "stack", split, triage.scores, variants, compatible, gnn,
                                       seed, stack.names_for(known, relation, cfg.backbone))
        metrics |= fitted.metrics() | {"stack_cache_hit": float(hit)}
        timer["stack_fit"] = time.perf_counter() - t0
    reviewer = None
    if d.get("rerank_k") and cutoff is not None:  # the tuned reviewer of the stack's heads (rerank.py)
        t0 = time.perf_counter()
        reviewer = rerank.Reranker(llm_config(cfg), load_mode(plain(cfg.evidence), plain(cfg.relation)["templates"]),
                                   split, d | {"seed": seed}, Path(cfg.paths.cache) / "tuned")
        timer["rerank_train"] = time.perf_counter() - t0
    ranker = None
    if ranks_by:
        t0 = time.perf_counter()
        ranker = (stack.VARIANTS[ranks_by], fitted.pair_scorer(ranks_by, space))
        timer["stack_features"] = time.perf_counter() - t0  # the cut graph's neighbours, read once
    named_sections = lambda future, *more: named(cfg, d, wanted, new, space, gnn, band, split, future, *more,  # noqa: E731
                                                 ranker=ranker)
    if d.get("entities_only"):
        return entities_only(cfg, space, band, triage.threshold, metrics, timer, named_sections)

    # -- triage of the whole space --------------------------------------------------------------
    t0 = time.perf_counter()
    n_cand, order = int(d["review_budget"]["candidates"]), d["order"]
    # paper: the reviews go to the best routed candidates (kept apart); reviewed: to the head of the
    # GNN's list, which then holds at least the reviewed ones (the table lists its first top_k)
    head_k, routed_k = (top_k, n_cand) if order == "paper" else (max(top_k, n_cand), 0)
    n_lists = int(d["entity_k"]) if d.get("entity_lists") else 0
    if exact:
        w = walk(space, gnn, head_k, seed, int(d["block_pairs"]), band, gnn.probability, routed_k=routed_k,
                 keep=cutoff is not None, desc=f"score {space.size:,} candidates", lists=n_lists, keep_dtype=np.float32)
    else:
        size = int(d["shortlist_auto"]) if short == "auto" else int(short)
        w = two_stage(gnn, space, head_k, seed, int(d["block_pairs"]), max(size, head_k), band, routed_k=routed_k,
                      sample=int(d["surrogate_sample"]), lists=n_lists, lists_shortlist=int(d["entity_lists_shortlist"]))
    timer["score"] = time.perf_counter() - t0
    metrics |= {"discover_candidates": float(space.size), "discover_exact": float(exact),
                **{f"discover_{k}{'_estimated' if w.estimated else ''}": float(v) for k, v in w.counts.items()},
                **{f"discover_two_stage_{k}": v for k, v in w.info.items()}}

    # -- review of the routed head ----------------------------------------------------------------
    t0 = time.perf_counter()
    head_prob = gnn.probability(w.head.score[:top_k])
    targets = w.routed if order == "paper" else Pairs(w.head.src[:n_cand], w.head.dst[:n_cand], w.head.score[:n_cand])
    reviewed, decisions, gamma, slow = [], np.zeros(0, dtype=np.int8), None, None
    metrics |= region_precision(split, triage)  # held-out precision per region; review() redoes it with test reviews
    metrics |= score_shift(split, triage, gnn, band, seed)  # how the cut graph moves scores against b* (trust)
    if targets is not None and len(targets.score):
        reviewed, decisions, gamma, review_metrics, slow = review(cfg, d, split, triage, targets, gnn, known)
        metrics |= review_metrics
    timer["review"] = time.perf_counter() - t0

    # -- the ranked table --------------------------------------------------------------------------
    t0 = time.perf_counter()
    table = build_table(cfg, split, triage, band, w, head_prob, reviewed, decisions, order, gamma, graph=known)
    n_demoted, n_reordered, first = listed_moves(table)
    metrics |= {"discover_listed_demoted": float(n_demoted), "discover_listed_reordered": float(n_reordered),
                "discover_listed_first_differs_at": float(first)}
    future = future_edges(kg, known, relation, cutoff) if cutoff is not None else None
    if future is not None:
        years = dict(zip(zip(future.src.tolist(), future.dst.tolist()), future.year.tolist()))
        table = table.with_columns(pl.Series("future_year", [years.get((s, t)) for s, t in
                                                            zip(table["left_id"].to_list(), table["right_id"].to_list())],
                                             dtype=pl.Int32))
    timer["table"] = time.perf_counter() - t0

    result = Discovery(table.select(COLUMNS), metrics, default_out(cfg), {}, space=space, graph=known)
    if w.lists is not None:
        result.lists = entity_lists(w.lists, known, gnn, exact)
        metrics["discover_entity_lists"] = float(result.lists["left_id"].n_unique())
    rows, known_rows = gnn, None
    if future is not None:
        t0 = time.perf_counter()
        src, dst = space.pairs(int(d["block_pairs"]))
        result.retro, result.curves, retro_metrics, known_rows = evaluate(cfg, d, split, space, gnn, band, w, reviewed,
                                                                           decisions, future, src, dst, gamma, fitted,
                                                                           reviewer and reviewer.heads)
        rows = stack.Rows(w.scores, space.src, src, gnn)  # the per-entity rows: the whole-space list's own
        del src, dst
        metrics |= retro_metrics
        timer["evaluate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    memo = stack.Memo(rows)  # the per-entity rows read each block once for the GNN and the stack
    stacked = {f"stack_{v}": (stack.VARIANTS[v], fitted.scorer(v, space, memo)) for v in d.get("stack") or []} \
        if future is not None else {}
    if reviewer is not None and f"stack_{rerank.VARIANT}" in stacked:  # the new entities' heads, as they are scored
        label, scorer = stacked[f"stack_{rerank.VARIANT}"]
        stacked[f"stack_{rerank.VARIANT}"] = (label, reviewer.heads.capture(scorer, space.dst))
    result.entities = named_sections(future, memo, stacked, known_rows)
    if result.entities is not None:
        metrics |= result.entities.metrics
        timer["entities"] = time.perf_counter() - t0
    if reviewer is not None and result.retro is not None:
        t0 = time.perf_counter()
        metrics |= reviewed_heads(reviewer, d, known, future, result)
        timer["rerank"] = time.perf_counter() - t0
    metrics |= calibrate.fit_metrics(gamma) if gamma is not None else {"gamma": float("nan")}
    if result.entities is not None and result.entities.lists:
        t0 = time.perf_counter()
        entity_cards(cfg, split, triage, band, result.entities, reviewed, decisions, gamma, known)
        timer["entity_cards"] = time.perf_counter() - t0
    metrics |= {f"discover_seconds_{k}": v for k, v in timer.items()}
    result.summary = summary(cfg, space, band, triage.threshold, gamma, w, len(reviewed), metrics, exact, slow)
    return result


def named(cfg: DictConfig, d: dict, wanted: list, new: list, space: CandidateSpace, gnn: GNNBlocks, band: Band, split,
          future, gnn_block=None, extra=None, known=None, ranker=None) -> entities.EntityReport | None:
    """The per-entity part: the named entities' lists (and with a cutoff the per-entity retrospective,
    ``gnn_block``, ``extra``, ``known`` and ``ranker`` as ``entities.entity_report`` reads them), what the graph
    records for each, and the new compositions' sections (``compositions``: ranked by the GNN, whose
    message passing reaches the new node; the stack's neighbour features would need the graph with it)."""
    seed = int(cfg.seed)
    report = entities.entity_report(d, wanted, space, gnn, band, split, future, seed, gnn_block, extra, ranker, known)
    if not (wanted or new):
        return report
    from hygrail.triage.train import load_scorer

    return compositions.add_sections(
        report, d, space, new, band=band, seed=seed, future=future,
        scorer_for=lambda graph: load_scorer(split, plain(cfg.backbone), seed, Path(cfg.paths.cache) / "triage",
                                             int(d["encode_edges"]), graph=graph))


def sample_keep(kg: KG, relation: str, cutoff: int | None, d: Mapping) -> np.ndarray:
    """The node ids of the whole ``kg`` a subgraph sample must hold for ``d``'s named entities (issue
    #36: a sample silently dropped Alström syndrome and BaTiO3): each entity named by name (an id names
    a node of the sample), its twins and the other-type node of its name, their neighbours in the graph
    known at ``cutoff`` (so no answer after it is kept for them alone), and a new composition's
    elements. Names are resolved on the whole graph: a typo fails here, with the whole graph's closest
    names."""
    known = kg if cutoff is None else kg.until(cutoff)
    space = CandidateSpace(known, kg.schema.relation(relation))
    given, new = compositions.options(d, space)
    named = entities.resolve(space, [v for v in given if not (isinstance(v, int) or str(v).strip().isdigit())])
    core = {n for e in named for n in (e.node, *e.twins, *e.also)}
    nodes = set(core)
    for n in core:
        nodes.update(known.neighbors(n)[0].tolist())
    via = (d.get("compositions") or {}).get("via")
    if new and via:
        wanted = {x for f in new for x in f.elements}
        nodes.update(int(i) for i in kg.nodes_of_type(via) if kg.names[i] in wanted)
        nodes.update(f.node for f in new if f.node is not None)
    return np.array(sorted(nodes), dtype=np.int64)


# The ranked table's columns (cards.COLUMNS) and types, for the empty table of ``discover.entities_only``.
TABLE_SCHEMA = {"rank": pl.Int64, "gnn_rank": pl.Int64, "left": pl.String, "right": pl.String, "score": pl.Float64,
                "region": pl.String, "verdict": pl.String, "decided_by": pl.String, "review": pl.String,
                "confidence": pl.Float64, "reasoning": pl.String, "statement": pl.String, "evidence": pl.String,
                "reviewer_evidence": pl.String, "structured": pl.String, "future_year": pl.Int32, "distance": pl.Int64,
                "hub_pair": pl.Boolean, "novelty": pl.Float64, "degree_adjusted": pl.Float64, "left_id": pl.Int64,
                "right_id": pl.Int64}


def entities_only(cfg: DictConfig, space: CandidateSpace, band: Band | None, threshold: float | None, metrics: dict,
                  timer: dict, named_sections, pending: int | None = None) -> Discovery:
    """``discover.entities_only``: the named entities' sections without the walk over the whole space:
    no global ranking, no band counts, no reviews; the page says so.

    Measured (2026-12-04, whole recipes: 20,952 nodes, 215,805 edges, 38.6 M Target-Precursor
    candidates; rgcn_plus at conf/experiment/retro_synthesis_recipes.yaml's 12 epochs / patience 4,
    no cutoff, model cached; 2 cores shared with two or three other jobs, load average 3.5-5): 10
    named targets took 39 and 56 s wall from the command line (``python -m hygrail.sweep ...
    discover.entities_only=true``: imports, MLflow run and report included), 10 with a new
    composition among them 44 and 59 s, and once 134 s, of which over 100 s passed before the KG had
    loaded (start-up under load; not explained). Inside discovery: 17-27 s preparation (reading the
    xz JSON ~10 s, the split's negatives ~6 s, the cached model and its encoding ~4 s, from a
    profile), 0.5 s for the 10 lists, 2.5-4.9 s more for a new composition (its second encoding);
    the imports alone took 24-25 s at that load. So the 60 s budget holds, with little margin under
    load; the next levers are a parsed-KG cache and the imports. The lists equal the whole run's,
    whose two-stage walk over the 38.6 M candidates took 83 s and whose first run trained the model
    in 1,554 s. Whole HPO (ranked by the cached stack; conf/experiment/discover_hpo.yaml): 3 diseases
    in 38 s wall, 10 (15 sections with their twins) in 52 s under load 2. ``pending``: the page is
    ``discover.first_answer``'s, written before the GNN (``band``, ``threshold`` None), with this many
    new compositions left for the GNN's page."""
    t0 = time.perf_counter()
    report = named_sections(None)
    timer["entities"] = time.perf_counter() - t0
    metrics |= report.metrics | {"discover_candidates": float(space.size), "discover_entities_only": 1.0,
                                 "gamma": float("nan")}
    metrics |= {f"discover_seconds_{k}": v for k, v in timer.items()}
    rel, schema = space.relation, space.kg.schema
    where = graph_named(cfg, space.kg)
    scored = (f"only the {len(report.lists)} named entities' candidates (discover.entities_only): the {space.size:,} "
              f"unobserved {schema.display_name(rel.src)}-{schema.display_name(rel.dst)} pairs were not walked, so "
              f"there is no global ranking, no count per region and no LLM review; run without "
              f"discover.entities_only for those")
    rankers = sorted({e.ranker for e in report.lists})
    by = cfg.backbone.name if rankers == ["GNN"] else f"{', '.join(rankers)} (GNN: {cfg.backbone.name})"
    lead = [f"Ranked by {by}: {scored}.",
            "Suggestions are model-generated candidates for expert or experimental validation, not findings."]
    if pending is not None:
        by = f"{', '.join(rankers)} (first answer: no GNN yet)"
        lead[0] = (f"First answer, ranked by {', '.join(rankers)} (discover.first_answer): the GNN ({cfg.backbone.name}) "
                   f"is being trained, and this page is rewritten with discover.entity_ranker's lists when it is done; "
                   f"stopped before then, the same command goes on from its last epoch. "
                   + (f"{pending} new composition(s) get their section then (the GNN ranks them). " if pending else "")
                   + f"Scored: {scored}.")
    facts = {"scored": scored, "data": cfg.data.name, "relation": f"{rel.name} ({rel.label})", "backbone": cfg.backbone.name,
             "ranked by": by, "seed": cfg.seed,
             "band [a*, b*]": "not yet: the GNN is training" if band is None else
             f"[{band.a:.4f}, {band.b:.4f}]" + (f" ({EMPTY_BAND})" if band.a == band.b else ""),
             "GNN-only threshold": "not yet" if threshold is None else f"{threshold:.4f}",
             "seconds": ", ".join(f"{k} {v:.1f}" for k, v in timer.items())}
    table = pl.DataFrame(schema=TABLE_SCHEMA).select(COLUMNS)
    result = Discovery(table, metrics, default_out(cfg), {}, space=space, graph=space.kg,
                       entities=report)
    result.summary = {"title": f"HyGRAIL discovery: {rel.label} candidates of {len(report.lists)} named entities "
                               f"({where})", "lead": lead, "facts": facts, "warnings": []}
    return result


def review(cfg: DictConfig, d: dict, split, triage, routed, gnn: GNNBlocks, graph):
    """LLM review of ``routed`` (the best routed candidates under ``discover.order=paper``, the head
    of the GNN's list under ``reviewed``), the rule (``llm.decision``: gamma, or the combined model
    of ``calibrated``) fit on validation hypotheses drawn where the reviewed candidates lie
    (``like_reviewed``), and test hypotheses drawn the same way for the reviewed region's held-out
    precision (``trust``): (reviewed, decisions, the rule's fit, metrics, the reviewer's slow-review note
    or None). The candidates' evidence
    is read from ``graph`` (the cut graph), the validation and test hypotheses' from the training
    graph, where they are not edges. The draw is from the
    routed hypotheses under ``paper`` (the candidates are routed ones) and from every validation
    (test) hypothesis under ``reviewed`` (the candidates may lie above b*, or below a*)."""
    mode = load_mode(plain(cfg.evidence), plain(cfg.relation)["templates"], triage.calibrated())
    y_val, y_test = split.part("val")["label"].to_numpy(), split.part("test")["label"].to_numpy()
    r_val = triage.route_val
    gnn_val = (triage.scores.val >= triage.threshold).astype(int)
    gnn_test = (triage.scores.test >= triage.threshold).astype(int)
    probs = gnn.probability(routed.score)
    budget = d["review_budget"]
    anywhere = d.get("order", "paper") == "reviewed"
    pool_val = np.ones(len(r_val), bool) if anywhere else r_val == -1
    pool_test = np.ones(len(triage.route_test), bool) if anywhere else triage.route_test == -1
    pick_val = like_reviewed(triage.scores.val, pool_val, probs, budget.get("val"), int(cfg.seed))
    pick_test = like_reviewed(triage.scores.test, pool_test, probs, budget.get("test"), int(cfg.seed) + 1)
    hyps = [Hypothesis(int(s), int(t), float(p)) for s, t, p in zip(routed.src, routed.dst, probs)]
    with reviewer_for(cfg, mode, split) as reviewer:
        rev_val = reviewer.review(hypotheses(split.part("val"), pick_val, triage.scores.val))
        rev_test = reviewer.review(hypotheses(split.part("test"), pick_test, triage.scores.test))
        reviewer.graph = graph  # one server, one cache: only where the evidence is read changes
        reviewed = reviewer.review(hyps)
        metrics = reviewer.metrics()
        slow = reviewer.client.slow_note  # why the embedded judge was slow, for the page (embedded.slow_note)
        cache = reviewer.cache_path()
    fell_back = check_failures([r.result for r in rev_val + rev_test + reviewed],
                               float(cfg.method["max_review_failure_rate"]), cfg.llm.name, cache)
    on_failure, rule = cfg.method.get("on_failure", "fallback"), cfg.llm.get("decision", "paper")
    gamma = val_gamma(r_val, gnn_val, y_val, pick_val, rev_val, on_failure, rule,
                      calibration=cfg.method.get("calibration", "platt"), cut=cfg.method.get("combined_cut", "max_f1"))
    decisions = decide(reviewed, gamma, (probs >= triage.threshold).astype(int), on_failure, rule)
    dec_test = decide(rev_test, gamma, gnn_test[pick_test], on_failure, rule)
    metrics |= {"discover_val_reviewed": float(len(pick_val)), "discover_test_reviewed": float(len(pick_test)),
                "discover_reviewed": float(len(reviewed)), "review_fallback_share": fell_back,
                "discover_llm_accepted": float(decisions.sum())}
    metrics |= region_precision(split, triage, pick_test, dec_test)
    metrics |= reviewer_figures("val", y_val[pick_val], decide(rev_val, gamma, gnn_val[pick_val], on_failure, rule))
    metrics |= reviewer_figures("test", y_test[pick_test], dec_test)
    return reviewed, decisions, gamma, metrics, slow


def like_reviewed(scores: np.ndarray, routed: np.ndarray, reviewed: np.ndarray, budget: int | None,
                  seed: int) -> np.ndarray:
    """Indices of the validation hypotheses gamma is chosen on, among the pool ``routed`` (a mask):
    those whose GNN score lies nearest the score range of the reviewed candidates (inside it first,
    ties by a seeded shuffle), ``budget`` of them (the whole pool when None).

    Discovery reviews the best-scored band candidates, near b* (``discover.order=paper``; the pool
    is the routed hypotheses), or the head of the GNN's list (``reviewed``; the pool is every
    validation hypothesis); the GNN score need not rank anything there, so a gamma set on another
    slice (e.g. the hypotheses nearest the GNN threshold, ``task=run``'s ``ambiguous`` order) does
    not transfer to them (``review_order``)."""
    idx = np.flatnonzero(routed)
    if budget is None or budget >= len(idx) or len(reviewed) == 0:
        return idx
    lo, hi = float(np.min(reviewed)), float(np.max(reviewed))
    s = scores[idx]
    gap = np.maximum(np.maximum(lo - s, s - hi), 0.0)
    shuffle = np.random.default_rng(seed).permutation(len(idx))
    return np.sort(idx[np.lexsort((shuffle, gap))[: int(budget)]])


def build_table(cfg: DictConfig, split, triage, band: Band, w, head_prob: np.ndarray, reviewed: list,
                decisions: np.ndarray, order: str = "paper", fit=None, graph=None) -> pl.DataFrame:
    """The head (best ``top_k`` by GNN score: the first ``len(head_prob)`` of ``w.head``) and every
    reviewed candidate, in HyGRAIL's order (``discover.order``: ``retro.hygrail_order`` or
    ``retro.reviewed_order``, the latter ordering the accepted by ``calibrate.priority`` under the
    rule as fit, ``fit``), each row a card (``card_records``) read from ``graph`` (the cut graph;
    default the split's training graph)."""
    rows: dict[tuple[int, int], dict] = {}
    n_head = len(head_prob)
    for i, (s, t, p) in enumerate(zip(w.head.src[:n_head].tolist(), w.head.dst[:n_head].tolist(), head_prob.tolist())):
        rows[(s, t)] = {"gnn_rank": i + 1, "score": p}
    above = w.counts.get("auto_accept", 0)
    rule = cfg.llm.get("decision", "paper")
    prio = calibrate.priority([r.result for r in reviewed], fit, rule,
                              np.array([r.hypothesis.score for r in reviewed], dtype=float)) \
        if order == "reviewed" and reviewed and fit is not None else np.full(len(reviewed), np.nan)
    for j, r in enumerate(reviewed):
        key = (r.hypothesis.src, r.hypothesis.dst)
        # paper: the routed head is the top of the band: every candidate above b* ranks before it;
        # reviewed: the reviewed ones are the GNN's head itself
        rows.setdefault(key, {"gnn_rank": (j + 1) if order == "reviewed" else above + j + 1, "score": r.hypothesis.score})
        rows[key] |= {"reviewed": r, "decision": int(decisions[j]), "priority": float(prio[j])}
    keys = list(rows)
    table = card_records(cfg, split, triage, band, rows, order, fit, graph)
    region = route(table["score"].to_numpy(), band)
    gnn_order = np.argsort(table["gnn_rank"].to_numpy(), kind="stable")
    verdicts = table["verdict"].to_numpy()
    llm = np.array([k in rows and "reviewed" in rows[k] for k in keys])
    if order == "reviewed":
        listed = reviewed_order(gnn_order, llm, verdicts == "accept",
                                np.array([rows[k].get("priority", np.nan) for k in keys], dtype=float))
    else:
        listed = hygrail_order(gnn_order, region == 1, llm & (verdicts == "accept"), llm & (verdicts == "reject"),
                               table["confidence"].fill_null(0.0).to_numpy())
    return table[listed].with_columns(pl.Series("rank", np.arange(1, len(listed) + 1)))


def verdict_of(row: dict, region: int, band: Band, threshold: float, order: str, fit, rule: str) -> tuple[str, str]:
    """(verdict, decided by) of one candidate (a ``card_records`` row): the review rule's for a
    reviewed pair in the band (under ``reviewed``, whatever its region), else its region's, each with
    the numbers that gave it (``trust.review_reason``, ``trust.gnn_reason``)."""
    rev = row.get("reviewed")
    if rev is None or (order != "reviewed" and region != -1):
        return {1: "accept", 0: "reject"}.get(region, "unreviewed"), gnn_reason(region, float(row["score"]), band, threshold)
    verdict, res = ("accept" if row["decision"] else "reject"), rev.result
    if rev.prepared.skip:
        return verdict, f"evidence mode: {rev.prepared.skip}"
    if res and res.ok:
        return verdict, review_reason(res, fit, rule, row["score"])
    return verdict, f"LLM failed: GNN fallback ({verdict})"


def card_evidence(evidence: dict) -> dict:
    """The retrieval settings of the cards' template evidence: the run's evidence mode's own, or for
    a mode without graph retrieval (``evidence=profile``) those of conf/evidence/template.yaml."""
    if "k" not in evidence:
        evidence = plain(OmegaConf.load(CONF / "evidence" / "template.yaml"))
    return evidence | {"mode": "template"}


def card_records(cfg: DictConfig, split, triage, band: Band, rows: dict[tuple[int, int], dict], order: str = "paper",
                 fit=None, graph=None) -> pl.DataFrame:
    """One card per pair of ``rows`` ((src, dst) -> gnn_rank, score (the GNN's probability), and for a
    reviewed pair its ``reviewed`` and ``decision``), in ``rows``' order, without ``rank``: the
    evidence read from ``graph`` (default the split's training graph), the novelty view among these
    pairs (``novelty``), the verdict and which rule gave it, with the numbers (``trust.gnn_reason``,
    ``trust.review_reason``). Under ``reviewed`` a reviewed row's verdict is the rule's whatever its
    region. What the main table and the per-entity cards (``entity_cards``) both show."""
    from hygrail.evidence.naturalize import Template

    graph = split.train_graph if graph is None else graph
    keys = list(rows)
    src = np.array([k[0] for k in keys], dtype=np.int64)
    dst = np.array([k[1] for k in keys], dtype=np.int64)
    score = np.array([rows[k]["score"] for k in keys], dtype=np.float64)
    region = route(score, band)
    # the novelty view among the listed hypotheses (``novelty``): plausibility is the GNN's order
    d = cfg.discover
    distance = distances(graph, src, dst, int(d.distance_cap))
    deg = graph.degree.astype(np.float64)
    novel, adjusted = novelty_scores(-np.array([rows[k]["gnn_rank"] for k in keys], dtype=np.float64), distance,
                                     deg[src] * deg[dst], float(d.novelty_beta))
    hub = hub_pairs(graph, src, dst, float(d.hub_percentile))
    templates = plain(cfg.relation)["templates"]
    rule = cfg.llm.get("decision", "paper")
    threshold = triage.threshold
    cards = Template(card_evidence(plain(cfg.evidence)), templates, triage.calibrated()).prepare(
        graph, split.relation, [Hypothesis(int(s), int(t), float(p)) for s, t, p in zip(src, dst, score)])
    records = []
    for i, (k, reg, card) in enumerate(zip(keys, region, cards)):
        row, rev = rows[k], rows[k].get("reviewed")
        res = rev.result if rev else None
        verdict, by = verdict_of(row, int(reg), band, threshold, order, fit, rule)
        theirs = rev.prepared.text if rev else None
        records.append({
            "gnn_rank": row["gnn_rank"], "left": graph.label(k[0]), "right": graph.label(k[1]), "score": float(row["score"]),
            "region": REGION_NAMES[int(reg)], "verdict": verdict, "decided_by": by,
            "review": res.review if res else None, "confidence": res.confidence if res else None,
            "reasoning": (res.reasoning or res.failure) if res else None, "statement": card.statement,
            "evidence": card.text, "reviewer_evidence": theirs if theirs != card.text else None,
            "structured": json.dumps(card.structured), "future_year": None, "distance": int(distance[i]),
            "hub_pair": bool(hub[i]), "novelty": float(novel[i]), "degree_adjusted": float(adjusted[i]),
            "left_id": k[0], "right_id": k[1]})
    return pl.DataFrame(records, schema_overrides={"review": pl.String, "confidence": pl.Float64, "reasoning": pl.String,
                                                    "reviewer_evidence": pl.String, "future_year": pl.Int32})


def entity_cards(cfg: DictConfig, split, triage, band: Band, report: entities.EntityReport, reviewed: list,
                 decisions: np.ndarray, fit, graph) -> None:
    """Each per-entity list's verdicts (every row, as the ranked table decides them: a pair the run
    reviewed by the rule, any other by its region; ``verdict_of``) and the evidence cards of its
    first ``discover.entity_cards`` rows (``card_records``, the ranked table's builder, on ``graph``,
    the cut graph), into the report (``EntityList.table``'s ``verdict``, ``EntityList.cards``).
    Cost: one evidence retrieval per card, as for the ranked table's 1,000 (2.2 s on the synthetic
    MatKG, ``entities``' module docstring); the option bounds it."""
    n = int(cfg.discover.get("entity_cards", 0))
    order, rule, rel = cfg.discover.get("order", "paper"), cfg.llm.get("decision", "paper"), split.relation
    by_pair = {(r.hypothesis.src, r.hypothesis.dst): (r, int(dec)) for r, dec in zip(reviewed, decisions)}
    for e in report.lists:
        node, partner = e.entity.node, e.table["id"].to_numpy()
        if rel.src == rel.dst:
            pairs = list(zip(np.minimum(node, partner).tolist(), np.maximum(node, partner).tolist()))
        else:
            pairs = [(node, p) if e.entity.node_type == rel.src else (p, node) for p in partner.tolist()]
        rows = {}
        gnn_score = e.table["gnn_score" if "gnn_score" in e.table.columns else "score"]  # the band reads the GNN's
        for rank, key, score in zip(e.table["rank"].to_list(), pairs, gnn_score.to_list()):
            rows[key] = {"gnn_rank": rank, "score": score}
            if key in by_pair:
                rows[key] |= {"reviewed": by_pair[key][0], "decision": by_pair[key][1]}
        region = route(gnn_score.to_numpy(), band)
        verdicts = [verdict_of(rows[k], int(r), band, triage.threshold, order, fit, rule)[0] for k, r in zip(pairs, region)]
        e.table = e.table.with_columns(pl.Series("verdict", verdicts, dtype=pl.String))
        if n and pairs and node < graph.num_nodes:  # a new composition's node is not in the cut graph: no evidence there
            carded = {k: rows[k] for k in pairs[:n]}
            e.cards = card_records(cfg, split, triage, band, carded, order, fit, graph).with_columns(
                pl.col("gnn_rank").alias("rank")).select(COLUMNS)


def evaluate(cfg: DictConfig, d: dict, split, space: CandidateSpace, gnn: GNNBlocks, band: Band, w, reviewed: list,
             decisions: np.ndarray, future, src: np.ndarray, dst: np.ndarray, fit=None,
             fitted: "stack.StackFit | None" = None, heads: "rerank.Heads | None" = None):
    """Every ranking of the whole candidate space under every condition of the retrospective grid
    (``retro``), exactly over every candidate: (``retro.Retrospective``, the headline's precision@k
    curves, metrics, the per-entity known row's hits counted on the same vectors: ``entities.RowHits``,
    None for a same-type relation). The rankings, all read from the cut graph (``space.kg``), as the GNN's: the
    GNN, HyGRAIL (in ``discover.order``'s order, the list the report shows; ``fit``: the review rule
    as fit, which orders the accepted under ``reviewed``; paired against the GNN at ``ks`` and K =
    the review budget, ``retro.paired_precision``), TSH, preferential attachment, common neighbours
    (every edge type), for a relation between two node types the 3-path count (its common
    neighbours *in the relation* are 0 by construction: ``baselines.structural``), every baseline of
    ``discover.entity_baselines`` over the whole space too (popularity, the relation's popularity
    (e.g. precursor popularity), compatible popularity, the learned baselines), and, up to
    ``discover.eval_max_pairs`` candidates, the GNN's novelty-aware and degree-adjusted scores
    (``novelty``: a graph distance per pair, too slow beyond). Each method is scored by one walk
    when its turn comes and freed after (``retro.retrospective``). ``src``, ``dst``: ``space.pairs()``;
    ``heads``: where the stack's heads are kept for the tuned reviewer (``rerank.Heads``)."""
    seed, block = int(cfg.seed), int(d["block_pairs"])
    graph = space.kg

    def walked(make, label):
        return lambda: walk(space, make(), 1, seed, block, keep=True, desc=label).scores

    moved = {}  # hygrail_scores: where HyGRAIL's list first differs from the GNN's
    scores = {"gnn": w.scores,
              "hygrail": lambda: hygrail_scores(cfg, d, space, src, dst, gnn, band, w, reviewed, decisions, fit, moved),
              "tsh": walked(lambda: TSHBlocks(split, d["tsh"], space), "TSH"),
              "pa": walked(lambda: PreferentialAttachment(graph, space), "preferential attachment"),
              "cn": walked(lambda: entities.common_neighbours(graph, space, {}), "common neighbours")}
    if not space.same_type:
        scores["paths3"] = walked(lambda: entities.paths3(graph, space, {}), "3-paths")
    for b in entities.whole_space_baselines(d):
        scores[b] = walked(lambda b=b: entities.BASELINES[b][1](graph, space, entities.baseline_options(d)),
                           entities.BASELINES[b][0])
    for v in d.get("stack") or []:  # the GNN's kept logits, block by block in walk order
        scores[f"stack_{v}"] = walked(lambda v=v: fitted.scorer(v, space, stack.Kept(w.scores)), stack.VARIANTS[v])
    if space.size <= int(d["eval_max_pairs"]):
        pa = walk(space, PreferentialAttachment(graph, space), 1, seed, block, keep=True).scores
        scores["novelty"], scores["degree_adjusted"] = novelty_scores(
            w.scores, distances(graph, src, dst, int(d["distance_cap"])), pa, float(d["novelty_beta"]))
    labels = METHODS | {b: entities.BASELINES[b][0] for b in entities.whole_space_baselines(d)} | \
        {f"stack_{v}": stack.VARIANTS[v] for v in d.get("stack") or []}
    scores = {labels[k]: v for k, v in scores.items()}
    pos = space.positions(src, dst, future.src, future.dst)
    if (pos < 0).any():
        raise RuntimeError(f"{int((pos < 0).sum())} reachable future edges are no candidates of the cut graph")
    counted = bool((space.kg.relation_edges(space.relation)["count"] > 1).any() or (future.count > 1).any())
    grid = {"horizons": d["horizons"], "min_degrees": d["min_degrees"],
            "min_counts": d["min_counts"] if counted else [1]}  # a KG without counts: every link has one
    ks = d["ks"]
    budget = int(d["review_budget"]["candidates"])
    # the per-entity known row, counted on each vector as the retrospective holds it (entities.RowHits)
    known_rows, tap = None, None
    if not space.same_type:
        known_rows = entities.RowHits(src, dst, pos, sorted(int(k) for k in d["entity_ks"]), len(space.dst), seed)
        per_entity = {"gnn", "tsh", *(d.get("entity_baselines") or []), *(f"stack_{v}" for v in d.get("stack") or [])}
        key = {label: k for k, label in labels.items()}
        reviewed_label = stack.VARIANTS[rerank.VARIANT] if heads is not None else None

        def tap(label, s):
            if key[label] in per_entity:
                known_rows.add(key[label], s)
            if label == reviewed_label:
                heads.from_vector(s, known_rows, src, dst)
    result = retrospective(scores, src, dst, (pos, future.year, future.count), None, space.kg.degree,
                           int(cfg.discover.cutoff), grid, ks, seed, int(d["degree_buckets"]),
                           keep_head=max([*ks, budget]), tap=tap)
    h, min_deg, min_count = result.headline
    y = np.zeros(len(src), dtype=np.int8)
    y[pos[answers(future.year, future.count, int(cfg.discover.cutoff), h, min_count) == 1]] = 1
    if min_deg > 0:  # the headline's usual degree 0 keeps every candidate (no per-candidate degree lookups)
        y *= degree_mask(space.kg.degree, src, dst, min_deg)
    order, gnn_order = result.heads[METHODS["hygrail"]], result.heads[METHODS["gnn"]]
    paired = paired_precision(order, gnn_order, y, [*ks, *([budget] if budget else [])])
    paired = paired.with_columns(pl.when(pl.col("K") == budget).then(pl.lit("= review budget")).otherwise(pl.lit(""))
                                 .alias("K is"))
    # margins against the best ranking of another family: the GNN's own lists (HyGRAIL's, the novelty views)
    # and the stack's variants are never each other's baseline (issue #45)
    family = {labels[k]: "gnn" for k in ("gnn", "hygrail", "novelty", "degree_adjusted") if k in labels} | \
        {stack.VARIANTS[v]: "stack" for v in d.get("stack") or []}
    result = dataclasses.replace(result, paired=paired, order=d.get("order", "paper"),
                                 answers=answers_table(space, future, result.places),
                                 margins=margins(result.headline_rows(), result.places, family))
    curves = result.curves
    metrics = {"retro_future_edges": float(len(future.src)), "retro_future_unreachable": float(future.unreachable),
               "retro_future_implied": float(future.implied), "retro_undated_excluded": float(future.undated),
               "retro_counts_known": float(counted),
               "retro_last_year": float(future.year.max()) if len(future.year) else float("nan"),
               # the whole-space list position where HyGRAIL's list first differs from the GNN's (0: never)
               "retro_hygrail_first_differs_at": float(moved.get("first", 0))}
    metrics["retro_review_budget"] = float(budget)
    for row in paired.iter_rows(named=True):  # the paired difference to the GNN at each K (headline answers)
        metrics |= {f"retro_hygrail_minus_gnn_precision_at_{row['K']}": row["HyGRAIL - GNN"],
                    f"retro_hygrail_gained_at_{row['K']}": float(row["gained"]),
                    f"retro_hygrail_lost_at_{row['K']}": float(row["lost"])}
    for v in (d.get("stack") or [] if reviewed else []):  # the reviewed list against the stacked ranker's
        for row in paired_precision(order, result.heads[stack.VARIANTS[v]], y, paired["K"]).iter_rows(named=True):
            metrics[f"retro_hygrail_minus_stack_{v}_precision_at_{row['K']}"] = row["HyGRAIL - GNN"]
    for row in result.headline_rows().iter_rows(named=True):
        metrics |= {f"retro_{key[row['method']]}_{k}": float(v) for k, v in row.items()
                    if k not in ("method", "horizon", "min_degree", "min_count", "n_candidates")}
    for row in result.margins.iter_rows(named=True):
        metrics |= {f"retro_{key[row['method']]}_{k}": float(v) for k, v in row.items()
                    if k.endswith(("_margin", "_margin_se")) or k.startswith("ap_gain")}
    return result, curves, metrics, known_rows


def answers_table(space: CandidateSpace, future, places: dict[str, np.ndarray]) -> pl.DataFrame:
    """One row per answer (a future edge): its ends, year, each end's relation degree and all-edge
    degree in the cut graph, and each method's place in its whole-space list (``retro.Retrospective.places``;
    0 = first). Where a method loses AUC against another shows in the rows where its place is worse
    (``bench/error_analysis.py``)."""
    kg = space.kg
    rel_degree = entities.relation_degree(kg, space).astype(np.int64)
    src, dst = np.asarray(future.src), np.asarray(future.dst)
    return pl.DataFrame({"left_id": src, "right_id": dst, "left": [kg.label(int(u)) for u in src],
                         "right": [kg.label(int(v)) for v in dst], "year": np.asarray(future.year),
                         "left_relation_degree": rel_degree[src], "right_relation_degree": rel_degree[dst],
                         "left_degree": np.asarray(kg.degree)[src], "right_degree": np.asarray(kg.degree)[dst]}
                        | {f"place {name}": pl.Series(p).fill_nan(None) for name, p in places.items()})  # null: not a headline answer


def hygrail_scores(cfg: DictConfig, d: dict, space: CandidateSpace, src: np.ndarray, dst: np.ndarray, gnn: GNNBlocks,
                   band: Band, w, reviewed: list, decisions: np.ndarray, fit, moved: dict) -> np.ndarray:
    """HyGRAIL's list over the whole space as a score (higher first; ties by the same tiebreak as
    the GNN's), exactly ``retro.hygrail_order`` / ``retro.reviewed_order`` of the GNN's logits L
    without sorting the space: each group of the order is L shifted past the others' range (R > |L|),
    and the few reviewed candidates the rule accepts get their rank within their group (by
    confidence or priority, then GNN order). ``moved["first"]``: the 1-based position where the list
    first differs from the GNN's (0: never)."""
    logits = w.scores
    if not reviewed:  # the GNN's list itself (no float64 copy: 8 B a candidate)
        return logits
    h = logits.astype(np.float64, copy=True)
    at = space.positions(src, dst, np.array([r.hypothesis.src for r in reviewed]),
                         np.array([r.hypothesis.dst for r in reviewed]))
    r = float(np.abs(logits).max()) + 1.0
    moves = np.ones(len(at), dtype=bool)
    if d.get("order", "paper") == "reviewed":
        key = calibrate.priority([x.result for x in reviewed], fit, cfg.llm.get("decision", "paper"),
                                 np.array([x.hypothesis.score for x in reviewed], dtype=float)) if fit is not None \
            else np.zeros(len(reviewed))
    else:
        key = np.array([x.result.confidence if x.result and x.result.confidence is not None else 0.0 for x in reviewed])
        above = route(gnn.probability(logits), band) == 1
        h[above] += 4 * r + len(at) + 1  # above b*: first, in GNN order, whatever a review said
        moves = ~above[at]
    yes, no = at[moves & (decisions == 1)], at[moves & (decisions == 0)]
    key = np.nan_to_num(np.asarray(key, dtype=np.float64)[moves & (decisions == 1)], nan=0.0)
    first = np.lexsort((tiebreak(src[yes], dst[yes], int(cfg.seed)), -logits[yes], -key))
    h[no] = logits[no] - 3 * r  # rejected: last, in GNN order
    h[yes[first]] = 2 * r + np.arange(len(yes), 0, -1)  # accepted: after any above b*, by key then GNN order
    # only reviewed candidates move: the lists first differ at the smallest position any of them holds in
    # either list, among those whose two positions differ
    tb = tiebreak(src, dst, int(cfg.seed))
    rank = lambda s, i: int(np.count_nonzero(s > s[i]) + np.count_nonzero((s == s[i]) & (tb < tb[i])))  # noqa: E731
    pairs = [(rank(logits, i), rank(h, i)) for i in at]
    differ = [min(a, b) for a, b in pairs if a != b]
    moved["first"] = min(differ) + 1 if differ else 0
    return h


def summary(cfg: DictConfig, space: CandidateSpace, band: Band, threshold: float, gamma, w, n_reviewed: int,
            metrics: dict, exact: bool, slow: str | None = None) -> dict:
    """The page's title, lead, facts, the held-out precision per region (``trust``) and its
    warnings (each also logged: printed where the run is watched; ``slow``: the reviewer's own,
    already logged)."""
    rel = space.relation
    schema = space.kg.schema
    c = w.counts
    est = " (estimated from a uniform sample)" if w.estimated else ""
    order = cfg.discover.get("order", "paper")
    where = ("the best-scored routed candidates" if order == "paper" else
             "the head of the GNN's list (its best-scored candidates, whatever their region)")
    lead = [f"{space.size:,} unobserved {schema.display_name(rel.src)}-{schema.display_name(rel.dst)} pairs scored by "
            f"{cfg.backbone.name} ({'every pair exactly' if exact else 'surrogate, then the model on a shortlist'}).",
            f"{c['auto_accept']:,} above b* (accepted without an LLM), {c['routed']:,} in the band, {c['auto_reject']:,} "
            f"below a*{est}: reviewing the whole band would take {c['routed']:,} LLM calls; {n_reviewed} were made "
            f"here on {where}.",
            band_note(band, threshold, metrics),
            "Accepted hypotheses are model-generated candidates for expert or experimental validation, not findings."]
    date = cfg.llm.get("training_data_date") or "unknown"
    facts = {"data": cfg.data.name, "relation": f"{rel.name} ({rel.label})", "backbone": cfg.backbone.name,
             "reviewer": f"{cfg.llm.name} (evidence: {cfg.evidence.mode})"
                         + (f", {note}" if (note := fallback_note(metrics.get("review_fallback_share", 0.0))) else ""),
             "reviewer's training data up to": str(date), "seed": cfg.seed,
             "cutoff": cfg.discover.cutoff if cfg.discover.cutoff is not None else "none (all edges)",
             "band [a*, b*]": f"[{band.a:.4f}, {band.b:.4f}]: above b* accepted, below a* rejected, without review",
             "GNN-only threshold": f"{threshold:.4f}: decides only routed candidates beyond the review budget",
             "gamma": "n/a (no review)" if gamma is None else _fit_text(gamma),
             "candidate reviews": n_reviewed, "scoring seconds": f"{metrics['discover_seconds_score']:.1f}",
             "order (discover.order)": ORDER_TEXT[order].format(
                 n=n_reviewed, by="combined P" if cfg.llm.get("decision") == "calibrated" else "confidence"),
             "moved by the review": _moves_text(metrics, order, untrusted(gamma))}
    for part, what in (("val", "validation reviews (gamma)"), ("test", "test reviews (held-out precision)")):
        n = int(metrics.get(f"reviewer_{part}_reviewed", 0))
        facts[what] = (f"{n} ({int(metrics[f'reviewer_{part}_positives'])} true links); the LLM accepted "
                       f"{int(metrics[f'reviewer_{part}_accepted'])} ({metrics[f'reviewer_{part}_accept_rate']:.0%}), "
                       f"precision {_share(metrics, f'reviewer_{part}')}") if n else "0"
    if "retro_future_edges" in metrics:
        facts["future edges (found after the cutoff)"] = (f"{int(metrics['retro_future_edges'])} reachable, "
                                                         f"{int(metrics['retro_future_unreachable'])} to entities new after it")
        facts["observed but undated (not ranked, not misses)"] = f"{int(metrics['retro_undated_excluded']):,}"
    trust = [{"region": text, "test hypotheses": int(metrics[f"trust_test_{name}_n"]),
              "true links": int(metrics[f"trust_test_{name}_positives"]),
              "accepted": int(metrics[f"trust_test_{name}_accepted"]),
              "precision of the accepted": _share(metrics, f"trust_test_{name}")}
             for name, text in REGION_TEXT.items()]
    reviews = int(sum(metrics.get(k, 0) for k in ("discover_val_reviewed", "discover_test_reviewed",
                                                  "discover_reviewed")))
    distrust = (f"γ = ∞: {UNTRUSTED}. The rule (accept iff the review says yes with confidence >= γ) rejected "
                f"every reviewed candidate, whatever the review said." if untrusted(gamma) and n_reviewed else None)
    warnings = [x for x in (distrust, accept_warning(metrics),
                            contamination(cfg.llm.name, date, cfg.discover.cutoff, reviews)) if x]
    for x in warnings:
        log.warning(x)
    warnings += [slow] if slow else []
    return {"title": f"HyGRAIL discovery: {rel.label} hypotheses ({graph_named(cfg, space.kg)})", "lead": lead, "facts": facts,
            "order": order,
            "trust": trust, "trust_note": f"Test part of the split: 1 true link per {cfg.split.neg_ratio} sampled "
                                          f"non-links; among the candidates true links are far rarer, so the same "
                                          f"decisions are less precise there.", "warnings": warnings}


def graph_named(cfg: DictConfig, kg) -> str:
    """The graph a page's title names: a sample keeps a fraction of each entity's edges, so its figures
    are a smoke test, and the title says so (issue #34), with the nodes kept for the named entities."""
    sample = cfg.data.get("subgraph_nodes")
    if not sample:
        return f"{cfg.data.name}, whole graph"
    kept = f", plus {kg.kept_in_sample:,} kept for the named entities and their neighbours" if kg.kept_in_sample else ""
    return (f"{cfg.data.name}, a {int(sample):,}-node sample{kept}: a smoke test; it keeps a fraction of each "
            f"entity's edges, so degree and path signals are weaker than on the whole graph")


# The ``order`` fact: which HyGRAIL list the page shows (``retro``'s module docstring).
ORDER_TEXT = {"paper": "paper: above b* first (GNN order), then LLM-accepted (by confidence), the rest (GNN order), "
                       "LLM-rejected last; the reviews went to the best routed candidates, below b*",
              "reviewed": "reviewed: the GNN's best {n} reviewed, whatever their region; accepted first (by {by}), "
                          "the rest in GNN order, rejected below the list"}


def _fit_text(fit) -> str:
    """The rule as fit, for the page: gamma, or the combined model's cut (``llm.decision=calibrated``);
    ∞ says what it means (``trust.untrusted``)."""
    if untrusted(fit):
        return f"∞: {UNTRUSTED} (accepting none of its reviews gave the best validation F1)"
    if isinstance(fit, calibrate.Combined):
        return f"calibrated: accept iff combined P(true | review, GNN score) >= cut {fit.cut:.3f}"
    return f"{fit:.3f}"


def _moves_text(metrics: dict, order: str, distrusted: bool = False) -> str:
    """How many listed hypotheses the review moved (``cards.listed_moves``) and where the list first
    differs from the GNN's, listed and (with a cutoff) over the whole candidate space; ``distrusted``:
    γ = ∞, where the rule, not the reviewer's verdicts, rejected them."""
    demoted, reordered = int(metrics["discover_listed_demoted"]), int(metrics["discover_listed_reordered"])
    first = int(metrics["discover_listed_first_differs_at"])
    why = " by the rule at γ = ∞, whatever the reviews said" if distrusted else ""
    text = (f"{demoted + reordered}: {demoted} rejected{why} moved below the list, {reordered} re-ordered; the list "
            f"first differs from the GNN's at rank {first}" if first else "none: the list is the GNN's")
    if "retro_hygrail_first_differs_at" in metrics:
        whole = int(metrics["retro_hygrail_first_differs_at"])
        text += (f" (whole candidate space: first differs at position {whole:,})" if whole
                 else " (whole candidate space: identical)")
    return text


def _share(metrics: dict, prefix: str) -> str:
    """'0.33 (1 of 3)': a precision with its counts; 'n/a (none accepted)'."""
    acc, tp = int(metrics[f"{prefix}_accepted"]), int(metrics[f"{prefix}_tp"])
    return f"{tp / acc:.2f} ({tp} of {acc})" if acc else "n/a (none accepted)"


def reviewed_heads(reviewer: "rerank.Reranker", d: dict, graph: KG, future, result: Discovery) -> dict:
    """The tuned reviewer's re-ordered heads against the stack's own order (``rerank``): known entities
    on their answers after the cutoff, new ones on theirs within the horizon, the whole-space top on
    the headline's answers; the table into ``reviewed_head.csv``, the page's note names the reviewer."""
    cutoff, horizon = int(d["cutoff"]), int(entities.baseline_options(d)["horizon"])

    def grouped(src, dst) -> dict:
        out: dict[int, set] = {}
        for u, v in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
            out.setdefault(u, set()).add(v)
        return out

    within = future.new_within(cutoff, horizon) if len(future.new_src) else np.zeros(0, bool)
    h, _, min_count = result.retro.headline
    hit = answers(future.year, future.count, cutoff, h, min_count) == 1
    table, metrics = reviewer.evaluate(graph, {"known": grouped(future.src, future.dst),  # entities.KNOWN_ROW
                                               "new": grouped(future.new_src[within], future.new_dst[within])},
                                       set(zip(future.src[hit].tolist(), future.dst[hit].tolist())))
    result.out.mkdir(parents=True, exist_ok=True)
    table.write_csv(result.out / "reviewed_head.csv")
    if result.entities is not None:
        result.entities.note += " " + reviewer.note(table)
    return metrics


# -- output ------------------------------------------------------------------------------------------
def write_report(result: Discovery) -> Path:
    """Table, Markdown, HTML (and with a cutoff the retrospective tables and the precision@K figure)
    into ``result.out``."""
    out = result.out
    out.mkdir(parents=True, exist_ok=True)
    figure = None
    if result.retro is not None:
        figure = out / "precision_at_k.png"
        h, deg, cnt = result.retro.headline
        precision_figure(result.curves, f"{result.summary['title']}\nanswers: {h}-year horizon, degree >= {deg}, "
                                        f">= {cnt} reference(s)").savefig(figure, dpi=120)
        result.retro.table.write_csv(out / "retrospective.csv")
        result.retro.buckets.write_csv(out / "retrospective_buckets.csv")
        if result.retro.answers is not None:
            result.retro.answers.write_csv(out / "retrospective_answers.csv")
        if result.retro.margins is not None:
            result.retro.margins.write_csv(out / "retrospective_margins.csv")
    write_table(result.table, out)
    write_markdown(result.table, result.summary, result.retro, out)
    write_html(result.table, result.summary, result.retro, figure, out)
    if result.entities is not None:
        entities.add_to_report(result.entities, out)
    if result.lists is not None:
        result.lists.write_parquet(out / "entity_lists.parquet")
    (out / "metrics.json").write_text(json.dumps(result.metrics, indent=1, default=float))
    return out


def entity_lists(lists, kg, gnn: GNNBlocks, exact: bool) -> pl.DataFrame:
    """``discover.entity_lists`` as a table: each source entity's best candidates by the GNN, one row
    per (entity, rank), with names, the logit and the probability; ``exact``: false where two stages
    ranked each entity's surrogate shortlist (``scoring.two_stage``)."""
    return pl.DataFrame({
        "left_id": lists.src, "left": [kg.label(i) for i in lists.src], "rank": lists.rank + 1,
        "right_id": lists.dst, "right": [kg.label(i) for i in lists.dst], "logit": lists.score,
        "probability": gnn.probability(lists.score.astype(np.float32)).astype(np.float64), "exact": exact,
    })


def precision_figure(curves: dict[str, np.ndarray], title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.4))
    # HyGRAIL's list is the GNN's until the review moves something (order=paper: after every candidate
    # above b*): dashed, so the two stay visible where they coincide; the GNN's novelty views dotted.
    for name, p in curves.items():
        style = "--" if name == METHODS["hygrail"] else ":" if name.startswith("GNN ") else "-"
        ax.plot(np.arange(1, len(p) + 1), p, style, label=name, lw=1.6)
    ax.set_xscale("log")
    ax.set_xlabel("K (top-K of the ranking)")
    ax.set_ylabel("precision@K (future edges)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def log_result(cfg: DictConfig, result: Discovery) -> None:
    """Into the open discovery run: ``discover.*`` as params, the metrics, the report as artifacts."""
    from hygrail import tracking

    with tracking.store(cfg.tracking) as mlflow:
        mlflow.set_tags({"task": "discover", "cutoff": str(cfg.discover.cutoff)})
        mlflow.log_params(tracking.flatten({"discover": plain(cfg.discover)}))
        mlflow.log_metrics({k: float(v) for k, v in result.metrics.items() if v is not None and np.isfinite(v)})
        mlflow.log_artifacts(str(result.out))


def main(cfg: DictConfig) -> dict:
    """The Hydra task (``task=discover``): one MLflow run in experiment ``discover.experiment``, live
    from start to end as a task=run cell's (``tracking.cell_run``: FAILED with the reason if it
    fails), holding the report; prints where the report is."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from hygrail import tracking
    from hygrail.stages import check_config

    sweep = None
    if HydraConfig.initialized():
        hc = HydraConfig.get()
        sweep = hc.sweep.dir if hc.mode == RunMode.MULTIRUN else hc.run.dir
    run_cfg = copy.deepcopy(cfg)
    run_cfg.tracking.experiment = cfg.discover.experiment
    with tracking.cell_run(run_cfg, sweep) as cell:
        # an unreachable LLM server fails in seconds, before any training (entities_only reviews nothing)
        if cfg.discover.review_budget.candidates and not cfg.discover.get("entities_only"):
            check_config(cfg)
        result = discover(cfg, logger=cell.logger())
        out = write_report(result)
        log_result(run_cfg, result)
    m = result.metrics
    n_acc = int((result.table["verdict"] == "accept").sum())
    if m.get("discover_entities_only"):
        print(f"{cfg.relation.name} {cfg.backbone.name} discovery of {len(result.entities.lists)} named entities only "
              f"(discover.entities_only: the {int(m['discover_candidates']):,} candidates not walked) | MLflow run "
              f"{cell.run_id} (experiment {cfg.discover.experiment})")
    else:
        print(f"{cfg.relation.name} {cfg.backbone.name} discovery: {int(m['discover_candidates']):,} candidates, "
              f"{n_acc} of the {result.table.height} listed accepted, {int(m.get('discover_reviewed', 0))} reviewed by "
              f"{cfg.llm.name} | MLflow run {cell.run_id} (experiment {cfg.discover.experiment})")
    if result.retro is not None:
        ks = options(cfg)["ks"]
        print(result.retro.headline_rows().select("method", "n_answers", "auc", "ap", f"precision_at_{ks[0]}",
                                                  f"precision_at_{ks[-1]}", f"recall_at_{ks[-1]}"))
    also = "hypotheses.md, hypotheses.csv, hypotheses.parquet" + (", entity_lists.parquet" if result.lists is not None else "")
    print(f"report: {out.resolve() / 'index.html'} (also {also})", flush=True)
    return {"status": "finished", "cell": f"discover {cfg.relation.name} {cfg.backbone.name}", "run_id": cell.run_id}
