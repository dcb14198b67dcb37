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
page names the rule that gave it with its numbers (``ranked.verdict_of``): b* may lie below the
GNN-only threshold, and γ = ∞ means the reviewer was not trusted (``trust``'s module docstring). The
per-entity sections get the ranked table's cards (``ranked.entity_cards``, ``ranked.card_records``).

This module runs the stages in that order (``discover``) and holds the named-entity path (``named``,
``sample_keep``, ``entities_only``); each stage is a room of its own: ``reviewing`` (the LLM review and
the rule's fit), ``ranked`` (the ranked table and its cards), ``rankings`` (the retrospective of
every ranking), ``report`` (the page, its files and the MLflow run).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import polars as pl
import torch
from omegaconf import DictConfig, OmegaConf
from threadpoolctl import threadpool_limits

from hygrail.data import data_path, load_kg
from hygrail.discovery import compositions, entities, entity_page, first_answer, options, pools, rerank, stack
from hygrail.discovery.backtest import plural
from hygrail.discovery.cards import COLUMNS, listed_moves
from hygrail.discovery.ranked import build_table, entity_cards
from hygrail.discovery.rankings import evaluate
from hygrail.discovery.report import Discovery, entity_lists, graph_named, log_result, summary, write_report
from hygrail.discovery.retro import check_cutoff, future_edges
from hygrail.discovery.reviewing import review, reviewed_heads
from hygrail.discovery.scoring import GNNBlocks, two_stage, walk
from hygrail.discovery.space import CandidateSpace
from hygrail.discovery.trust import EMPTY_BAND, region_precision, score_shift
from hygrail.evidence.mode import load_mode
from hygrail.kg import KG, DataError
from hygrail.review import calibrate
from hygrail.stages import build_split, gnn_stage, llm_config, plain
from hygrail.triage.routing import Band

log = logging.getLogger("hygrail.discovery")


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
    if d.get("entities_only"):
        return question_folder(cfg)
    name = f"{cfg.backbone.name}-{cfg.llm.name}-{cfg.evidence.mode}-seed{cfg.seed}"
    name += f"-cutoff{d.cutoff}" if d.cutoff is not None else ""
    name += "-reviewed" if d.get("order", "paper") == "reviewed" else ""  # beside the paper order's report
    return Path(cfg.paths.outputs) / "discover" / str(cfg.relation.name) / name


def question_folder(cfg: DictConfig) -> Path:
    """``discover.entities_only``'s folder: one per question, as task=recipes keeps one per query (issue #56:
    each query overwrote the last page): ``<outputs>/discover/<relation>/<the entities as asked>-<hash>``,
    the hash over the data, backbone, seed and every discover option (the reviewer takes no part: none runs)."""
    slug = re.sub(r"[^\w.+-]+", "_", "+".join(str(x) for x in cfg.discover.entities))[:80].strip("_") or "entities"
    query = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in ("data", "backbone", "discover")}
    digest = hashlib.sha256(json.dumps(query | {"seed": int(cfg.seed)}, sort_keys=True, default=str).encode())
    return Path(cfg.paths.outputs) / "discover" / str(cfg.relation.name) / f"{slug}-{digest.hexdigest()[:8]}"


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
        page = write_report(early).resolve() / "index.html"
        print("\n".join(entity_page.terminal(early.sections)), flush=True)
        print(f"first answer (the stack without the GNN, {m['first_answer_seconds']:.0f} s): {page}; training the GNN "
              f"now, the page is rewritten when it is done (stopping here keeps this page; the same command goes on "
              f"with the training)", flush=True)
    with threads(int(cfg.threads)):  # the model depends on the thread count (conf/discover/default.yaml)
        triage, metrics, _ = gnn_stage(cfg, known, split, logger)
    from hygrail.triage.train import load_scorer

    scorer = load_scorer(split, plain(cfg.backbone), seed, Path(cfg.paths.cache) / "triage", int(d["encode_edges"]),
                         graph=known)
    band = Band(triage.band[0], triage.band[1], True, True)  # clipped cuts route exactly as the infinite ones
    gnn = GNNBlocks(scorer, space)
    timer["prepare"] = time.perf_counter() - t0
    fitted, by = None, d.get("entity_ranker", "gnn")
    # the stack variant ordering the lists (entity_ranker=ltr: the stack with the GNN is one of the lists it chooses from)
    ranks_by = ("with_gnn" if by == "ltr" else by.removeprefix("stack_")) if by != "gnn" and wanted else None
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
    ltr = None
    ltr_variants = list(d.get("ltr") or []) if cutoff is not None or by == "ltr" else []
    if ltr_variants:  # the per-entity ranker (pools.py), fit on the split's window, its list chosen per population
        t0 = time.perf_counter()
        ltr = pools.build(cfg, d, split, triage, space, fitted, ltr_variants, int(d.get("threads") or cfg.threads))
        metrics |= ltr.fitted.metrics() | {"ltr_cache_hit": float(ltr.hit)}
        timer["ltr_fit"] = time.perf_counter() - t0
    ranker = None
    if ranks_by:
        t0 = time.perf_counter()
        ranker = (stack.VARIANTS[ranks_by], fitted.pair_scorer(ranks_by, space))
        if by == "ltr":
            ranker = list_by_population(ltr, space, gnn, ranker)
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
    cold = cold_rows(cfg, d, split, known, future, fitted, ltr) if future is not None else None
    if ltr is not None and future is not None:  # the per-entity ranker's variants, beside the stack's
        here = ltr.inputs(space, memo)
        stacked |= {v: (pools.VARIANTS[v], ltr.scorer(v, here)) for v in ltr.fitted.rankers}
    new_rows = stacked if cold is None else cold.extra  # what ranks the new entities
    if reviewer is not None and f"stack_{rerank.VARIANT}" in new_rows:  # the new entities' heads, as they are scored
        label, scorer = new_rows[f"stack_{rerank.VARIANT}"]
        new_rows[f"stack_{rerank.VARIANT}"] = (label, reviewer.heads.capture(scorer, space.dst))
    result.entities = named_sections(future, memo, stacked, known_rows, cold)
    if ltr is not None and future is not None:  # what ranking the entities with the per-entity ranker cost
        for v in ltr.fitted.rankers:
            used = [x[v][1] for x in (stacked, cold.extra if cold is not None else {}) if v in x]
            metrics[f"ltr_{v}_score_seconds"] = float(sum(getattr(u, "seconds", 0.0) for u in used))
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


def list_by_population(ltr: "pools.Built", space: CandidateSpace, gnn: GNNBlocks, stacked: tuple) -> dict:
    """``discover.entity_ranker=ltr``: population -> (label, pair scorer) of the list the pre-cutoff check chose
    for it (``pools.check_and_choose``: the GNN, the stack with the GNN, the per-entity ranker's variants)."""
    here = ltr.inputs(space, gnn)
    lists = {"gnn": ("GNN", gnn.pairs), "stack_with_gnn": stacked[:2]}
    lists |= {v: (pools.VARIANTS[v], ltr.scorer(v, here).pairs) for v in ltr.fitted.rankers}
    out = {}
    for pop in pools.POPULATIONS:
        key = ltr.fitted.choice.get(pop, "stack_with_gnn")
        out[pop] = (*lists[key], pools.choice_note(ltr.fitted.check, pop, key, {k: v[0] for k, v in lists.items()}))
    return out


def cold_rows(cfg: DictConfig, d: dict, split, known: KG, future, fitted, ltr=None) -> entities.Cold | None:
    """How the retrospective ranks the entities first linked after the cutoff (``entities.Cold``): over the
    cut graph with their descriptions supplied as a user would give them (``KG.describe``: a new
    material's composition, which the cut graph withholds), the GNN passing messages into them only, and
    the stack's variants reading their features there; None when nothing was withheld for them (a
    disease is given by its name: the cut graph itself serves)."""
    graph = known.describe(future.new_src)
    if graph is known:
        return None
    from hygrail.triage.train import load_scorer

    space = CandidateSpace(graph, known.schema.relation(cfg.relation.name))
    scorer = load_scorer(split, plain(cfg.backbone), int(cfg.seed), Path(cfg.paths.cache) / "triage",
                         int(d["encode_edges"]), graph=graph)
    gnn = stack.Memo(GNNBlocks(scorer, space))
    extra = {f"stack_{v}": (stack.VARIANTS[v], fitted.scorer(v, space, gnn)) for v in d.get("stack") or []}
    if ltr is not None:
        here = ltr.inputs(space, gnn)
        extra |= {v: (pools.VARIANTS[v], ltr.scorer(v, here)) for v in ltr.fitted.rankers}
    return entities.Cold(space, gnn, extra)


def named(cfg: DictConfig, d: dict, wanted: list, new: list, space: CandidateSpace, gnn: GNNBlocks, band: Band, split,
          future, gnn_block=None, extra=None, known=None, cold=None, ranker=None) -> entities.EntityReport | None:
    """The per-entity part: the named entities' lists (and with a cutoff the per-entity retrospective,
    ``gnn_block``, ``extra``, ``known``, ``cold`` and ``ranker`` as ``entities.entity_report`` reads them), what the graph
    records for each, and the new compositions' sections (``compositions``: ranked by the GNN, whose
    message passing reaches the new node; the stack's neighbour features would need the graph with it)."""
    seed = int(cfg.seed)
    report = entities.entity_report(d, wanted, space, gnn, band, split, future, seed, gnn_block, extra, ranker, known,
                                    cold)
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
    sides = {e.entity.node_type for e in report.lists}
    partners = plural(report.partner_type[sides.pop()]) if len(sides) == 1 else "candidates"
    asked = list(dict.fromkeys(e.entity.asked or e.entity.name for e in report.lists))
    lead = [f"Each list ranks the {partners} not recorded for it ({where}) by {', '.join(rankers)}, best first; the "
            f"sentence under each name says how often such lists held one recorded later.",
            "Suggestions are model-generated candidates for expert or experimental validation, not findings."]
    if pending is not None:
        by = f"{', '.join(rankers)} (first answer: no GNN yet)"
        lead.insert(0, f"First answer, ranked by {', '.join(rankers)} (discover.first_answer) while the GNN "
                       f"({cfg.backbone.name}) trains: this page is rewritten with discover.entity_ranker's lists when it "
                       f"is done; stopped before then, the same command goes on from its last epoch. "
                       + (f"{pending} new composition(s) get their section then (the GNN ranks them)." if pending else ""))
    trust_table = options(cfg).get("trust_table")
    trust = data_path(str(trust_table)) if trust_table else None
    facts = {"scored": scored, "data": cfg.data.name, "relation": f"{rel.name} ({rel.label})", "backbone": cfg.backbone.name,
             "ranked by": by, "seed": cfg.seed, "back-test figures (discover.trust_table)": str(trust),
             "band [a*, b*]": "not yet: the GNN is training" if band is None else
             f"[{band.a:.4f}, {band.b:.4f}]" + (f" ({EMPTY_BAND})" if band.a == band.b else ""),
             "GNN-only threshold": "not yet" if threshold is None else f"{threshold:.4f}",
             "seconds": ", ".join(f"{k} {v:.1f}" for k, v in timer.items())}
    table = pl.DataFrame(schema=TABLE_SCHEMA).select(COLUMNS)
    result = Discovery(table, metrics, default_out(cfg), {}, space=space, graph=space.kg,
                       entities=report)
    result.summary = {"title": f"{partners[:1].upper() + partners[1:]} not yet recorded for {', '.join(asked)}",
                      "lead": lead, "facts": facts, "warnings": [], "question": True, "relation": rel.name,
                      "trust_table": trust}
    return result


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
        print("\n".join(entity_page.terminal(result.sections)))
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
    if result.sections is not None:
        also = f"hypotheses.md, {entity_page.LIST_FILE}: every listed row with its ids and scores"
    print(f"report: {out.resolve() / 'index.html'} (also {also})", flush=True)
    return {"status": "finished", "cell": f"discover {cfg.relation.name} {cfg.backbone.name}", "run_id": cell.run_id}
