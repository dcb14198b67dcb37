"""What ``task=discover`` writes: the page's title, lead, facts and warnings (``summary``), the files
of its folder (``write_report``: table, Markdown, HTML, the retrospective's tables and the
precision@K figure), the per-entity lists as a table (``entity_lists``) and the MLflow run
(``log_result``), and what they are written from (``Discovery``)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from omegaconf import DictConfig
import polars as pl

from hygrail.discovery import entities
from hygrail.discovery.cards import write_html, write_markdown, write_table
from hygrail.discovery.entity_page import add_to_report, write_question
from hygrail.discovery.rankings import METHODS
from hygrail.discovery.retro import Retrospective
from hygrail.discovery.scoring import GNNBlocks
from hygrail.discovery.space import CandidateSpace
from hygrail.discovery.trust import REGION_TEXT, UNTRUSTED, accept_warning, band_note, contamination, untrusted
from hygrail.review import calibrate
from hygrail.review.stage import fallback_note
from hygrail.stages import plain
from hygrail.triage.routing import Band

log = logging.getLogger("hygrail.discovery")


@dataclass
class Discovery:
    """What one discovery found (``run.discover``) and the report is written from."""

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
    sections: list | None = None  # discover.entities_only's question page, as written (``entity_page.Section``)


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


# -- output ------------------------------------------------------------------------------------------
def write_report(result: Discovery) -> Path:
    """Table, Markdown, HTML (and with a cutoff the retrospective tables and the precision@K figure)
    into ``result.out``; ``discover.entities_only``: the question page (``entity_page.write_question``)."""
    out = result.out
    out.mkdir(parents=True, exist_ok=True)
    if result.summary.get("question"):  # discover.entities_only: the named entities' page alone, no ranked table
        result.sections = write_question(result.entities, result.graph, result.summary, out)
        (out / "metrics.json").write_text(json.dumps(result.metrics, indent=1, default=float))
        return out
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
        add_to_report(result.entities, out, result.graph)
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
