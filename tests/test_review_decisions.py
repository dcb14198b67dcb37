"""Decision rules that can use a weak reviewer (llm.decision=calibrated, hygrail/review/calibrate.py),
the expected-value review order (method.review_order=expected_value) and the simulated reviewers of
bench/bench_review.py --frontier that measure them."""

import math
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from omegaconf import OmegaConf
from sklearn.metrics import roc_auc_score

from conftest import ROOT
from hygrail.kg import DataError
from hygrail.metrics import REGIONS, attribution, prf
from hygrail.pipeline import regions, review_and_decide
from hygrail.review.calibrate import Combined, choose_gamma, decide, flip_probability, fit_metrics
from hygrail.review.contract import ReviewResult
from hygrail.stages import review_order

sys.path.insert(0, str(ROOT / "bench"))
from bench_review import break_even, simulated_confidence, simulated_reviews  # noqa: E402


def _p(conf):
    return ReviewResult("yes" if conf >= 0.5 else "no", conf, "simulated", "", "", None)


@pytest.mark.parametrize("auc", [0.6, 0.7, 0.8, 0.9])
def test_simulated_reviewer_reaches_its_set_auc(auc):
    y = np.r_[np.ones(5000, int), np.zeros(5000, int)]
    conf = simulated_confidence(y, auc, np.random.default_rng(1))
    assert roc_auc_score(y, conf) == pytest.approx(auc, abs=0.02)
    assert ((conf >= 0) & (conf <= 1)).all()
    assert np.mean(conf[y == 0]) == pytest.approx(0.5, abs=0.02)  # negatives: P(yes) = Phi(N(0,1)), uniform
    oracle = simulated_confidence(y, 1.0, np.random.default_rng(1))
    assert (oracle == y).all()


def test_break_even_is_where_the_gain_last_crosses_zero():
    aucs = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert break_even(aucs, [-0.04, -0.04, -0.02, 0.02, 0.05, 0.1]) == "0.75"
    assert break_even(aucs, [0.01, 0.01, 0.02, 0.03, 0.04, 0.1]) == "≤0.5"
    # no change at first, a dip, then a gain: the crossing after the dip (0.8 + 0.1 * 0.011 / 0.012)
    assert break_even(aucs, [0.0, 0.0, -0.015, -0.011, 0.001, 0.18]) == "0.89"
    assert break_even(aucs, [-0.1] * 5 + [-0.01]) == "none"
    assert break_even(aucs, [0.0] * 6) == "n/a"


def _band(n_val=400, n_test=400, seed=0):
    """A hand-built triage: every hypothesis routed, GNN scores weakly informative (positives +0.01),
    10% positives, GNN threshold above the band (GNN-only rejects every routed one)."""
    rng = np.random.default_rng(seed)
    y_val, y_test = ((rng.random(n) < 0.1).astype(int) for n in (n_val, n_test))
    s_val, s_test = (0.03 + 0.04 * rng.random(len(y)) + 0.01 * y for y in (y_val, y_test))
    t = SimpleNamespace(scores=SimpleNamespace(val=s_val, test=s_test), threshold=0.2,
                        route_val=np.full(n_val, -1), route_test=np.full(n_test, -1))
    return t, y_val, y_test


def _split(y_val, y_test):
    import polars as pl

    part = {p: pl.DataFrame({"src": np.arange(len(y)), "dst": np.arange(len(y)), "label": y})
            for p, y in (("val", y_val), ("test", y_test))}
    return SimpleNamespace(part=lambda name: part[name])


def _cfg(rule="calibrated", order="ambiguous", budget=None, calibration="platt", cut="max_f1"):
    return OmegaConf.create({"seed": 3, "llm": {"decision": rule},
                             "method": {"review_order": order, "review_budget": budget or {}, "on_failure": "fallback",
                                        "calibration": calibration, "combined_cut": cut}})


def test_calibrated_rule_and_its_cut_are_fit_on_validation_only():
    t, y_val, y_test = _band()
    conf = {"val": simulated_confidence(y_val, 0.9, np.random.default_rng(5)),
            "test": simulated_confidence(y_test, 0.9, np.random.default_rng(6))}
    gnn_val, gnn_test = np.zeros(len(y_val), int), np.zeros(len(y_test), int)
    cfg = _cfg(order="expected_value", budget={"val": None, "test": 60})
    runs = {}
    for name, labels_test in (("as drawn", y_test), ("test labels flipped", 1 - y_test), ("all test positive", np.ones_like(y_test))):
        review = simulated_reviews(_split(y_val, labels_test), t, conf)  # the same answers: only the labels differ
        runs[name] = review_and_decide(cfg, t, y_val, gnn_val, gnn_test, review)
    first = runs["as drawn"]
    assert isinstance(first.fit, Combined) and first.fit.model is not None
    for d in runs.values():
        assert fit_metrics(d.fit) == fit_metrics(first.fit)
        assert (d.pick_test == first.pick_test).all() and (d.final_test == first.final_test).all()
    assert len(first.pick_test) == 60 and len(first.pick_val) == 400
    # the weights say the reviewer carries the signal: a review weight well above the GNN's
    m = fit_metrics(first.fit)
    assert m["combined_w_review"] > 1.0 and m["combined_w_review"] > abs(m["combined_w_gnn"])
    assert set(m) == {"combined_cut", "combined_base_rate", "combined_w_gnn", "combined_w_review", "combined_intercept",
                      "platt_slope", "platt_intercept"} and "gamma" not in m
    # ... and validation labels do move it
    y_other = np.random.default_rng(9).permutation(y_val)
    moved = review_and_decide(cfg, t, y_other, gnn_val, gnn_test, simulated_reviews(_split(y_other, y_test), t, conf))
    assert fit_metrics(moved.fit) != m


def test_combined_rule_accepts_what_an_informative_reviewer_says_yes_to():
    # validation: 20 positives at P(yes) 0.8, 180 negatives at 0.2 except 10 at 0.8; GNN scores flat
    conf = np.r_[np.full(20, 0.8), np.full(170, 0.2), np.full(10, 0.8)]
    y = np.r_[np.ones(20, int), np.zeros(180, int)]
    scores = np.full(200, 0.05)
    fit = choose_gamma([_p(c) for c in conf], y, np.zeros(200, int), scores=scores, rule="calibrated")
    # accept the 30 at 0.8: tp 20 fp 10 -> F1 40/50 = 0.8; accept none: 0
    assert fit.probability(np.array([0.8]), np.array([0.05]))[0] == pytest.approx(fit.cut)
    got = decide([_p(0.8), _p(0.2), _p(0.8)], fit, np.zeros(3, int), rule="calibrated", scores=np.full(3, 0.05))
    assert got.tolist() == [1, 0, 1]
    # half_max_f1: the cut is half the whole validation decision's best F1 (0.8 -> 0.4)
    half = choose_gamma([_p(c) for c in conf], y, np.zeros(200, int), scores=scores, rule="calibrated", cut="half_max_f1")
    assert half.cut == pytest.approx(0.4)
    # with 5 TP and 5 FN fixed outside (base counts): accepting the 30 gives 2*25/(50+10+5) = 0.769
    based = choose_gamma([_p(c) for c in conf], y, np.zeros(200, int), base_counts=(5, 0, 5), scores=scores,
                         rule="calibrated", cut="half_max_f1")
    assert based.cut == pytest.approx(50 / 65 / 2)
    # one class among the validation reviews: accept none (cut +inf), the base rate as probability
    none = choose_gamma([_p(c) for c in conf[20:]], y[20:], np.zeros(180, int), scores=scores[20:], rule="calibrated")
    assert none.model is None and none.cut == math.inf and none.base_rate == 0.0
    iso = choose_gamma([_p(c) for c in conf], y, np.zeros(200, int), scores=scores, rule="calibrated",
                       calibration="isotonic")
    assert iso.calibrated(np.array([0.8, 0.2])) == pytest.approx([20 / 30, 0.0])
    with pytest.raises(DataError, match=r"^method.calibration='beta': expected one of \('platt', 'isotonic'\)$"):
        choose_gamma([_p(c) for c in conf], y, np.zeros(200, int), scores=scores, rule="calibrated", calibration="beta")
    with pytest.raises(DataError, match=r"^method.combined_cut='median'"):
        choose_gamma([_p(c) for c in conf], y, np.zeros(200, int), scores=scores, rule="calibrated", cut="median")
    with pytest.raises(DataError, match="GNN score"):
        choose_gamma([_p(c) for c in conf], y, np.zeros(200, int), rule="calibrated")


def test_expected_value_order_reviews_the_documented_items():
    # probability rule, gamma 0.5: the positives' validation reviews are all accepted (A1 = 1), one of
    # the negatives' four (A0 = 0.25). P(accept) = 0.25 + 0.75 p; flip = P(accept) if g = 0 else 1 - it:
    # p   .5    .1    .02   .3    .9      g 0 0 0 1 1
    # -> .625  .325  .265  .525  .075     so a budget of 2 reviews items 0 and 3, of 3 also item 1
    val = [_p(c) for c in (0.9, 0.7, 0.1, 0.3, 0.6, 0.2)]
    y = np.array([1, 1, 0, 0, 0, 0])
    prior = np.array([0.5, 0.1, 0.02, 0.3, 0.9])
    current = np.array([0, 0, 0, 1, 1])
    flip = flip_probability(0.5, "probability", val, y, np.full(5, 0.05), current, prior)
    assert flip == pytest.approx([0.625, 0.325, 0.265, 0.525, 0.075])
    band = np.ones(5, bool)
    assert review_order(np.full(5, 0.05), band, 0.1, 2, 0, "expected_value", flip).tolist() == [0, 3]
    assert review_order(np.full(5, 0.05), band, 0.1, 3, 0, "expected_value", flip).tolist() == [0, 1, 3]
    # without values (validation: nothing fit yet) it is the seeded random sample
    assert (review_order(np.full(5, 0.05), band, 0.1, 2, 0, "expected_value")
            == review_order(np.full(5, 0.05), band, 0.1, 2, 0, "random")).all()
    # the paper's rule reads the verdict too: 0.6 says yes, so the same; under gamma 0.8 A1 = 0.5, A0 = 0
    assert flip_probability(0.8, "paper", val, y, np.full(5, 0.05), current, prior) == pytest.approx(
        [0.25, 0.05, 0.01, 0.85, 0.55])


def test_expected_value_order_under_the_combined_rule_follows_the_cut():
    """Under ``calibrated`` the flip probability depends on the GNN score: below the cut, the higher
    the score (the nearer the cut), the likelier a review lifts it; the pipeline reviews those first."""
    t, y_val, y_test = _band(seed=2)
    conf = {"val": simulated_confidence(y_val, 0.8, np.random.default_rng(1)),
            "test": simulated_confidence(y_test, 0.8, np.random.default_rng(2))}
    review = simulated_reviews(_split(y_val, y_test), t, conf)
    d = review_and_decide(_cfg(order="expected_value", budget={"test": 25}), t, y_val, np.zeros(400, int),
                          np.zeros(400, int), review)
    fit = d.fit
    s = np.array([0.03, 0.05, 0.07])
    prior = np.array([0.1, 0.1, 0.1])  # the same prior: only the score's place under the combined rule differs
    flip = flip_probability(fit, "calibrated", [r.result for r in review("val", np.arange(400))], y_val, s,
                            np.zeros(3, int), prior)
    want = [0.1 * np.mean(fit.probability(conf["val"][y_val == 1], si) >= fit.cut)
            + 0.9 * np.mean(fit.probability(conf["val"][y_val == 0], si) >= fit.cut) for si in s]
    assert flip == pytest.approx(want)
    assert flip[0] < flip[1] < flip[2]
    from hygrail.stages import flip_values

    value = flip_values(fit, "calibrated", d.rev_val, y_val[d.pick_val], t.scores.val, y_val, t.scores.test,
                        np.zeros(400, int))
    rest = np.setdiff1d(np.arange(400), d.pick_test)
    assert len(d.pick_test) == 25 and value[d.pick_test].min() >= value[rest].max()


def test_attribution_rows_add_up_to_the_total_change():
    t, y_val, y_test = _band(seed=4)
    t.route_test[:50], t.route_test[50:80] = 0, 1  # auto-reject 50, auto-accept 30, the rest routed
    gnn_test = (np.random.default_rng(0).random(400) < 0.15).astype(int)
    conf = {"val": simulated_confidence(y_val, 0.9, np.random.default_rng(1)),
            "test": simulated_confidence(y_test, 0.9, np.random.default_rng(2))}
    for rule in ("paper", "probability", "calibrated"):
        d = review_and_decide(_cfg(rule, "random", {"test": 200}), t, y_val, np.zeros(400, int), gnn_test,
                              simulated_reviews(_split(y_val, y_test), t, conf))
        region = regions(t.route_test, d.pick_test)
        a = attribution(y_test, gnn_test, d.final_test, region)
        final, gnn = prf(y_test, d.final_test), prf(y_test, gnn_test)
        assert sum(a[f"attr_{r}_tp"] for r in REGIONS) == final["tp"] - gnn["tp"]
        assert sum(a[f"attr_{r}_fp"] for r in REGIONS) == final["fp"] - gnn["fp"]
        assert sum(a[f"attr_{r}_changed"] for r in REGIONS) == (d.final_test != gnn_test).sum()
        assert sum(a[f"attr_{r}_n"] for r in REGIONS) == 400
        assert (a["attr_auto_reject_n"], a["attr_auto_accept_n"], a["attr_reviewed_n"], a["attr_over_budget_n"]) == (
            50, 30, 200, 120)
        assert a["attr_over_budget_changed"] == 0  # over the budget: the GNN-only decision
        assert a["attr_reviewed_changed"] > 0


def test_a_calibrated_cell_logs_its_fit_and_attribution(tmp_path):
    """One task=run cell end to end (scripted server, a tiny R-GCN) with llm.decision=calibrated and the
    expected-value order under a budget: the fit's own metric names (no gamma), call rate still the
    routed share, and attribution rows that add up."""
    import polars as pl
    from hydra import compose, initialize_config_dir

    from conftest import CONF
    from hygrail.pipeline import run_cell
    from hygrail.stages import build_split
    from scripted_server import Reply, ScriptedServer, ok_review

    with ScriptedServer(default=Reply(ok_review("no", 0.1))) as server:
        with initialize_config_dir(str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=[
                "data.scale=0.5", "backbone=rgcn", "backbone.epochs=4", "backbone.val_every=2", "relation=chm_apl",
                "routing.m=0.995", "routing.n=0.9", "llm=scripted", f"llm.base_url={server.base_url}",
                f"paths.outputs={tmp_path}", "method=hygrail", "evidence=none", "+llm.decision=calibrated",
                "method.review_order=expected_value", "method.review_budget.test=20"])
        kg, split = build_split(cfg)
        statement = cfg.relation.templates.hypothesis
        for part in ("val", "test"):  # a reviewer right on every positive
            pos = split.part(part).filter(pl.col("label") == 1)
            for s, d in zip(pos["src"].to_list(), pos["dst"].to_list()):
                server.script(statement.format(left=kg.label(s), right=kg.label(d)), Reply(ok_review("yes", 0.9)))
        m = run_cell(cfg).metrics
    assert "gamma" not in m and {"combined_cut", "combined_w_review", "platt_slope"} <= set(m)
    assert m["test_reviewed"] == 20 and m["test_routed_unreviewed"] == round(m["test_call_rate"] * m["test_n"]) - 20
    assert sum(m[f"test_attr_{r}_n"] for r in REGIONS) == m["test_n"]
    assert sum(m[f"test_attr_{r}_tp"] for r in REGIONS) == m["test_tp"] - m["gnn_test_tp"]
    assert sum(m[f"test_attr_{r}_fp"] for r in REGIONS) == m["test_fp"] - m["gnn_test_fp"]
    assert m["test_attr_over_budget_changed"] == 0


def test_calibrated_rows_are_marked_in_table2():
    import polars as pl

    from hygrail.report import table2
    from test_report import RUNS

    runs = RUNS.with_columns(pl.when(pl.col("tag.method") == "hygrail").then(pl.lit("calibrated"))
                             .otherwise(pl.lit("paper")).alias("param.llm.decision"))
    md, _ = table2(runs)
    assert "| HyGRAIL-Auto¶ | 0.400 ± 0.141 | 0.500 ± 0.141 |" in md and "§" not in md
    assert "¶ decision rule: accept iff a logistic regression of (GNN score logit, calibrated P(yes))" in md
