"""One cell end to end (paper §3-4) against the scripted OpenAI-compatible server on 127.0.0.1:
HyGRAIL with an oracle reviewer, the review budget, HyGRAIL-NE's prompt, KG-FM's per-candidate
calls and its stratified cap, and the MLflow + report rows they produce."""

import dataclasses
import json
import re

import numpy as np
import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from conftest import CONF
from hygrail import tracking
from hygrail.evidence.naturalize import Template
from hygrail.kg import DataError
from hygrail.metrics import REGIONS
from hygrail.pipeline import run_cell, stratified_cap
from hygrail.stages import build_split, review_order
from hygrail.review.contract import LLMCallError
from hygrail.report import load_runs, table2
from scripted_server import Reply, ScriptedServer, ok_review

SMALL = ["data.scale=0.5", "backbone=rgcn", "backbone.epochs=10", "backbone.val_every=5", "relation=chm_apl",
         "routing.m=0.995", "routing.n=0.9"]  # strict purities: a wide band, so something is routed


def _cfg(tmp_path, url, *overrides):
    with initialize_config_dir(str(CONF), version_base="1.3"):
        return compose(
            "config",
            overrides=[*SMALL, "llm=scripted", f"llm.base_url={url}", f"paths.outputs={tmp_path}", *overrides],
        )


def _oracle(server, cfg):
    """Script the server to answer 'yes' (0.9) exactly for the split's true positives."""
    kg, split = build_split(cfg)
    statement = cfg.relation.templates.hypothesis
    for part in ("val", "test"):
        pos = split.part(part).filter(pl.col("label") == 1)
        for s, d in zip(pos["src"].to_list(), pos["dst"].to_list()):
            server.script(statement.format(left=kg.label(s), right=kg.label(d)), Reply(ok_review("yes", 0.9)))
    return kg, split


@pytest.fixture()
def server():
    with ScriptedServer(default=Reply(ok_review("no", 0.1))) as s:
        yield s


def test_oracle_reviewer_lifts_f1_over_gnn_only(tmp_path, server):
    cfg = _cfg(tmp_path, server.base_url, "method=hygrail", "evidence=template")
    _oracle(server, cfg)
    res = run_cell(cfg)
    m = res.metrics
    assert server.count == m["llm_calls"] == m["val_reviewed"] + m["test_reviewed"] > 0
    assert m["test_routed_unreviewed"] == 0
    # Perfect answers inside the band, the GNN's purity-checked decisions outside it.
    assert m["test_f1"] >= m["gnn_test_f1"]
    test = res.predictions.filter(pl.col("split") == "test")
    routed = test.filter(pl.col("route") == -1)
    assert routed.height == round(m["test_call_rate"] * test.height)
    assert (routed["pred"] == routed["label"]).all(), "a reviewed hypothesis ignored the oracle's verdict"
    assert m["gamma"] <= 0.9
    # Template evidence reached the reviewer, stated once.
    user = server.requests[0]["messages"][-1]["content"]
    assert user.startswith("Hypothesis: The material ") and user.count("Hypothesis:") == 1
    assert "has been extracted from the knowledge graph" in user


def test_review_budget_reviews_the_most_ambiguous_first(tmp_path, server):
    cfg = _cfg(tmp_path, server.base_url, "method=hygrail", "evidence=none",
               "method.review_budget.val=4", "method.review_budget.test=6")
    res = run_cell(cfg)
    m = res.metrics
    assert (m["val_reviewed"], m["test_reviewed"]) == (4, 6)
    assert server.count == 10
    assert m["test_routed_unreviewed"] > 0
    # The call rate is the paper's: the share of test routed to the LLM (the band), budget or not;
    # what the LLM actually reviewed has its own names.
    test = res.predictions.filter(pl.col("split") == "test")
    n_test, routed = test.height, 6 + m["test_routed_unreviewed"]
    assert m["test_n"] == n_test and m["test_call_rate"] == pytest.approx(routed / n_test)
    assert m["band_test_call_rate"] == m["test_call_rate"]
    assert m["test_review_rate"] == pytest.approx(6 / n_test) and m["test_band_reviewed_share"] == pytest.approx(6 / routed)
    # Decision attribution: every test hypothesis in one region; the regions' TP/FP effects add up
    # to the difference between HyGRAIL and GNN-only, and routed-but-unreviewed keeps the GNN decision.
    assert sum(m[f"test_attr_{r}_n"] for r in REGIONS) == n_test
    assert (m["test_attr_reviewed_n"], m["test_attr_over_budget_n"]) == (6, m["test_routed_unreviewed"])
    assert m["test_attr_over_budget_changed"] == 0
    assert sum(m[f"test_attr_{r}_tp"] for r in REGIONS) == m["test_tp"] - m["gnn_test_tp"]
    assert sum(m[f"test_attr_{r}_fp"] for r in REGIONS) == m["test_fp"] - m["gnn_test_fp"]
    assert test.group_by("region").len().sort("region").rows() == sorted(
        (r, int(m[f"test_attr_{r}_n"])) for r in REGIONS if m[f"test_attr_{r}_n"])
    changed = test.filter(pl.col("pred") != pl.col("gnn_pred"))
    assert changed.height == sum(m[f"test_attr_{r}_changed"] for r in REGIONS)
    # The cell's seed is the reviewer's sampling seed
    assert {r["seed"] for r in server.requests} == {42}
    # HyGRAIL-NE: the hypothesis only, no evidence in the prompt.
    assert all("Evidence" not in r["messages"][-1]["content"] for r in server.requests)


def test_review_order_breaks_ties_without_looking_at_row_order():
    scores = np.full(40, 0.3)  # all equally ambiguous: rows 0-19 could be the positives
    picks = [review_order(scores, np.ones(40, bool), 0.3, 10, seed) for seed in range(20)]
    assert all(len(p) == 10 for p in picks)
    assert np.mean([np.sum(p < 20) for p in picks]) == pytest.approx(5, abs=1.5)  # not always the first rows
    assert (review_order(scores, np.ones(40, bool), 0.3, 10, 3) == picks[3]).all()  # seeded


def test_a_reviewer_without_usable_verdicts_stops_the_cell(tmp_path):
    with ScriptedServer(default=Reply("this is not json at all")) as bad:
        cfg = _cfg(tmp_path, bad.base_url, "method=hygrail", "evidence=none",
                   "method.review_budget.val=5", "method.review_budget.test=5")
        with pytest.raises(LLMCallError, match=r"10 of 10 reviews gave no usable verdict \(10 unparseable reply\)"):
            run_cell(cfg)


def test_stratified_cap_keeps_the_positive_rate():
    labels = np.array([1] * 10 + [0] * 200)
    idx = stratified_cap(labels, 42, seed=0)
    assert len(idx) == 42 and labels[idx].sum() == 2
    assert len(set(idx)) == 42 and (np.diff(idx) > 0).all()
    assert (stratified_cap(labels, None, 0) == np.arange(210)).all()
    assert (stratified_cap(labels, 42, 0) == idx).all()
    # small caps keep the rate too (no forced positive: 1 in 10 would double it)
    assert labels[stratified_cap(labels, 10, 0)].sum() == 0 and labels[stratified_cap(labels, 21, 0)].sum() == 1
    with pytest.raises(DataError, match="method.cap=0"):
        stratified_cap(labels, 0, 0)


def test_kgfm_reviews_every_candidate_within_the_cap_and_reaches_the_report(tmp_path, server):
    cfg = _cfg(tmp_path, server.base_url, "method=kgfm", "method.cap.val=30", "method.cap.test=40")
    _oracle(server, cfg)
    res = run_cell(cfg)
    m = res.metrics
    assert server.count == 70 == m["llm_calls"]  # once per candidate in the capped sample
    assert m["test_sampled"] == 1 and m["test_evaluated"] == 40 and m["test_call_rate"] == 1
    assert m["test_f1"] == 1.0  # the oracle is right on every sampled candidate
    # Raw KG triples as context (Bai et al.), no GNN score and none of HyGRAIL's evidence scoring
    # (requests arrive in any order: check them all).
    triples = 0
    for request in server.requests:
        user = request["messages"][-1]["content"]
        lines = user.splitlines()
        assert lines[0].startswith("Hypothesis: The material ") and lines[1].startswith("Knowledge graph context (head, relation")
        assert all(re.fullmatch(r"\(.+, [A-Z]+-[A-Z]+, .+, \d+\)", line) for line in lines[2:]) or lines[2:] == ["(no triples found)"]
        triples += len(lines) - 2
        for phrase in ("GNN prediction score", "norm=", "path score", "well-established", "mechanistic link",
                       "generic/common node", "converge", "inconsistency"):
            assert phrase not in user
    assert triples > 3 * len(server.requests)  # context, not an empty section (6 per hypothesis on this small graph)
    assert res.predictions.filter(pl.col("split") == "test")["pred"].is_in([0, 1]).sum() == 40

    tracking.log_cell(cfg, res, sweep="test")
    runs = load_runs(cfg.tracking.uri, [cfg.tracking.experiment])
    md, flat = table2(runs)
    assert "| KG-FM | 1.000† | 1.000† |" in md and "† sampled" in md
    row = flat.filter(pl.col("method") == "KG-FM").to_dicts()[0]
    assert row["llm"] == "scripted" and row["test_f1"] == 1.0 and row["sampled"]
    samples = json.loads(json.dumps(res.samples))
    assert samples and samples[0]["review"] in ("yes", "no")


def test_llm_naturalization_is_batched_then_reviewed(tmp_path, server):
    server.script("You summarise knowledge-graph evidence", Reply("Graph evidence: both entities share Photocatalysis."))
    cfg = _cfg(tmp_path, server.base_url, "method=hygrail", "evidence=llm",
               "method.review_budget.val=3", "method.review_budget.test=4")
    res = run_cell(cfg)
    m = res.metrics
    # one naturalization and one review per reviewed hypothesis, through the same client and cache
    assert server.count == 2 * (3 + 4) and m["evidence_fallbacks"] == 0
    assert m["llm_prestage_calls"] == m["llm_review_calls"] == 7 and m["llm_prestage_prompt_tokens"] > 0
    reviews = [r for r in server.requests if "summarise" not in r["messages"][0]["content"]]
    assert len(reviews) == 7
    user = reviews[0]["messages"][-1]["content"]
    assert user.startswith("Hypothesis: ") and "Graph evidence: both entities share Photocatalysis." in user


def test_test_labels_cannot_change_any_choice(tmp_path, server, monkeypatch):
    """Band, GNN threshold, gamma, evidence texts and every test decision come from training and
    validation only: the same cell with the test labels permuted chooses and decides the same."""
    from hygrail import pipeline

    cfg = _cfg(tmp_path, server.base_url, "method=hygrail", "evidence=template",
               "method.review_budget.val=8", "method.review_budget.test=8")
    _oracle(server, cfg)  # a reviewer that says yes to the true positives: gamma is not trivial
    real = run_cell(cfg)
    build = pipeline.build_split

    def permuted_test_labels(c):
        kg, split = build(c)
        test = (split.pairs["split"] == "test").to_numpy()
        labels = split.pairs["label"].to_numpy().copy()
        labels[test] = np.random.default_rng(0).permutation(labels[test])
        assert (labels != split.pairs["label"].to_numpy()).any()
        return kg, dataclasses.replace(split, pairs=split.pairs.with_columns(pl.Series("label", labels)))

    monkeypatch.setattr(pipeline, "build_split", permuted_test_labels)
    other = run_cell(cfg)
    assert other.band == real.band and other.gnn_threshold == real.gnn_threshold
    for k in ("gamma", "band_a", "band_b", "test_call_rate", "test_reviewed", "gnn_threshold"):
        assert other.metrics[k] == real.metrics[k], k
    assert [s["evidence"] for s in other.samples] == [s["evidence"] for s in real.samples]
    cols = ["src", "dst", "score", "gnn_pred", "region", "pred", "review", "confidence"]
    assert other.predictions.filter(pl.col("split") == "test").select(cols).equals(
        real.predictions.filter(pl.col("split") == "test").select(cols))
    assert other.metrics["test_f1"] != real.metrics["test_f1"]  # the labels did change


class TierMode(Template):
    """A mode that decides some hypotheses without review and labels every one with a tier."""

    breakdown = ("tier",)

    def prepare(self, graph, relation, hyps, llm=None):
        out = super().prepare(graph, relation, hyps, llm)
        for h, p in zip(hyps, out):
            p.skip = "reject" if h.src % 3 == 0 else "gnn" if h.src % 3 == 1 else None
            p.info = {"tier": "even" if h.dst % 2 == 0 else "odd"}
        return out


def test_a_mode_can_decide_without_review_and_break_f1_down(tmp_path, server):
    cfg = _cfg(tmp_path, server.base_url, "method=hygrail", "evidence=template",
               "evidence.strategy=test_pipeline.TierMode", "method.review_budget.val=12", "method.review_budget.test=15")
    server.default = Reply(ok_review("yes", 0.95))
    res = run_cell(cfg)
    m = res.metrics
    test = res.predictions.filter(pl.col("split") == "test")
    reviewed = test.filter(pl.col("region") == "reviewed")
    assert reviewed.height == 15
    sent = reviewed.filter(pl.col("skip").is_null())
    assert server.count == m["llm_review_calls"] == sent.height + res.predictions.filter(
        (pl.col("split") == "val") & (pl.col("region") == "reviewed") & pl.col("skip").is_null()).height
    assert m["evidence_skipped"] == 27 - server.count
    # skipped rows: no review, fixed decisions; sent rows: the reviewer's yes (gamma <= 0.95 or inf)
    assert (reviewed.filter(pl.col("skip") == "reject")["pred"] == 0).all()
    gnn_left = reviewed.filter(pl.col("skip") == "gnn")
    assert (gnn_left["pred"] == gnn_left["gnn_pred"]).all() and gnn_left["review"].is_null().all()
    assert sent["review"].to_list() == ["yes"] * sent.height
    # F1 per tier over the reviewed test rows
    assert m["test_by_tier_even_n"] + m["test_by_tier_odd_n"] == 15
    even = reviewed.filter(pl.col("tier") == "even")
    assert m["test_by_tier_even_n"] == even.height
    tp = int(((even["pred"] == 1) & (even["label"] == 1)).sum())
    assert m["test_by_tier_even_recall"] == pytest.approx(tp / max(1, int(even["label"].sum())))


def test_a_kg_without_years_gets_a_random_split_and_says_so(tmp_path, server, monkeypatch, caplog):
    from hygrail import stages
    from hygrail.kg import KG, NO_YEAR

    load = stages.load_kg
    monkeypatch.setattr(stages, "load_kg", lambda c: (kg := load(c)) and KG(
        kg.schema, kg.nodes, kg.edges.with_columns(pl.lit(NO_YEAR).alias("year"))))
    res = run_cell(_cfg(tmp_path, server.base_url, "method=gnn_only"))
    assert res.tags == {"split": "random", "split_ties": "shuffle", "split_graph_cut": "relation"} and res.metrics["split_dated_positives"] == 0
    assert "split is RANDOM, not temporal" in caplog.text


@pytest.mark.parametrize("method, prefix", [("gnn_only", "gnn_"), ("tsh", "tsh_")])
def test_routing_threshold_rule_sets_the_decision_of_gnn_and_tsh(tmp_path, server, method, prefix):
    """routing.threshold=half_max_f1: both score models decide at half their validation max F1,
    and the logged threshold, predictions and F1 follow it (routing.py decision_threshold)."""
    from sklearn.metrics import f1_score

    from hygrail.thresholds import max_f1

    paper = run_cell(_cfg(tmp_path, server.base_url, f"method={method}"))
    half = run_cell(_cfg(tmp_path, server.base_url, f"method={method}", "routing.threshold=half_max_f1"))
    val, test = (half.predictions.filter(pl.col("split") == p) for p in ("val", "test"))
    best, at = max_f1(val["score"].to_numpy(), val["label"].to_numpy())
    assert paper.gnn_threshold == pytest.approx(at) and paper.metrics[f"{prefix}threshold"] == pytest.approx(at)
    assert half.gnn_threshold == half.metrics[f"{prefix}threshold"] == pytest.approx(best / 2) != pytest.approx(at)
    pred = (test["score"].to_numpy() >= best / 2).astype(int)
    assert (test["pred"].to_numpy() == pred).all()
    assert half.metrics[f"{prefix}test_f1"] == pytest.approx(f1_score(test["label"].to_numpy(), pred))
