"""Discovery's evaluation to Science4Cast's standard, its novelty view and what its page says about
trust (issue #28): the horizon, degree and count filters select the documented pairs on a
hand-built graph; the novelty scores have their documented values; the fact about HyGRAIL's list
is true when nothing is above b*; a reviewer trained after the cutoff is warned about; the held-out
precision per region of a tiny run matches a hand computation from its split."""

import logging

import numpy as np
import polars as pl
import pytest

from hygrail.discovery import novelty, retro, trust
from hygrail.discovery.cards import agreement
from hygrail.discovery.space import CandidateSpace, ranking
from hygrail.kg import KG, DataError, Relation, Schema
from hygrail.review.contract import ReviewResult
from scripted_server import Reply, ScriptedServer, ok_review
from test_discover import _cfg

AB = Relation("ab", "A", "B")
SCHEMA = Schema(("A", "B"), {"ab": AB})


def _kg(edges: list[tuple[int, int, int, int]], n_a: int = 4, n_b: int = 4) -> KG:
    """Nodes A0..A{n_a-1} (ids 0..), then B0..; ``edges``: (a, b, year, count) by the index within each type."""
    nodes = pl.DataFrame({"name": [f"A{i}" for i in range(n_a)] + [f"B{i}" for i in range(n_b)],
                          "type": ["A"] * n_a + ["B"] * n_b})
    u, v, year, count = zip(*edges)
    return KG(SCHEMA, nodes, pl.DataFrame({"u": list(u), "v": [n_a + b for b in v], "type": "A-B",
                                           "count": list(count), "year": list(year)}))


# -- the retrospective grid ---------------------------------------------------------------------------
def test_horizons_degrees_and_counts_select_the_documented_pairs():
    # Known by 2010: A0-B0, A0-B1, A1-B0, A1-B1, A2-B2 (degrees A0 2, A1 2, A2 1, A3 1 (A3-B3), B0 2, B1 2,
    # B2 1, B3 1). After it: A0-B2 2011 (1 ref), A1-B2 2013 (5 refs), A2-B0 2015 (3 refs), A3-B0 2016
    # (beyond 5 years), A2-B1 2012 (2 refs).
    kg = _kg([(0, 0, 2005, 1), (0, 1, 2006, 2), (1, 0, 2007, 1), (1, 1, 2008, 4), (2, 2, 2009, 1), (3, 3, 2010, 1),
              (0, 2, 2011, 1), (1, 2, 2013, 5), (2, 0, 2015, 3), (3, 0, 2016, 1), (2, 1, 2012, 2)])
    known = kg.until(2010)
    future = retro.future_edges(kg, known, AB, 2010)
    assert future.count.tolist() == [1, 5, 3, 1, 2]
    space = CandidateSpace(known, AB)
    src, dst = space.pairs()
    assert len(src) == 16 - 6
    year, count = retro.future_of(src, dst, future, kg.num_nodes, False)
    name = {i: n for i, n in enumerate(kg.names)}

    def chosen(mask):
        return sorted(f"{name[s]}-{name[d]}" for s, d in zip(src[mask], dst[mask]))

    assert chosen(retro.answers(year, count, 2010, 1, 1) == 1) == ["A0-B2"]
    assert chosen(retro.answers(year, count, 2010, 3, 1) == 1) == ["A0-B2", "A1-B2", "A2-B1"]
    assert chosen(retro.answers(year, count, 2010, 5, 1) == 1) == ["A0-B2", "A1-B2", "A2-B0", "A2-B1"]
    assert chosen(retro.answers(year, count, 2010, 5, 3) == 1) == ["A1-B2", "A2-B0"]  # A0-B2 (1), A2-B1 (2): too few refs
    # both ends of degree >= 2 at the cutoff: A0, A1 with B0, B1 only, all observed: no candidate is left
    # among them; >= 1: everything
    assert not retro.degree_mask(known.degree, src, dst, 2).any()
    assert retro.degree_mask(known.degree, src, dst, 1).all()

    # the long table: an oracle for the 5-year answers, and a score that ranks them last
    oracle = retro.answers(year, count, 2010, 5, 1).astype(float)
    grid = {"horizons": [1, 3, 5], "min_degrees": [0, 2], "min_counts": [1, 3]}
    r = retro.retrospective({"oracle": oracle, "anti": -oracle}, src, dst, year, count, known.degree, 2010, grid,
                            ks=(1, 4), seed=0, n_buckets=2)
    t = r.table
    assert t.height == 2 * 3 * 2 * 2 and r.headline == (3, 0, 1)
    row = t.filter((pl.col("method") == "oracle") & (pl.col("horizon") == 5) & (pl.col("min_degree") == 0)
                   & (pl.col("min_count") == 1)).row(0, named=True)
    assert row["n_candidates"] == 10 and row["n_answers"] == 4 and row["auc"] == 1.0 and row["ap"] == 1.0
    assert row["precision_at_4"] == 1.0 and row["recall_at_1"] == 0.25
    anti = t.filter((pl.col("method") == "anti") & (pl.col("horizon") == 5) & (pl.col("min_degree") == 0)
                    & (pl.col("min_count") == 1)).row(0, named=True)
    assert anti["auc"] == 0.0 and anti["precision_at_4"] == 0.0
    # each headline (3-year) answer's place in the list: the oracle ties its four 5-year answers first
    # (positions 0-3 of 10: middle 1.5), the anti-oracle last (6-9: 7.5); the 5-year-only one is no
    # headline answer
    for method, place in (("oracle", 0.15), ("anti", 0.75)):
        p = r.places[method]
        assert len(p) == int((year > 0).sum()) and np.isnan(p).sum() == len(p) - 3
        assert p[~np.isnan(p)] == pytest.approx([place] * 3)
    # at horizon 1 the 5-year oracle ties its 4 answers (1 a true one): AUC by sklearn's ties
    one = t.filter((pl.col("method") == "oracle") & (pl.col("horizon") == 1) & (pl.col("min_count") == 1)
                   & (pl.col("min_degree") == 0)).row(0, named=True)
    assert one["n_answers"] == 1 and one["auc"] == pytest.approx((6 + 0.5 * 3) / 9)  # beats 6 non-answers, ties 3
    empty = t.filter(pl.col("min_degree") == 2)
    assert (empty["n_candidates"] == 0).all() and empty["auc"].is_nan().all()
    # d(u)·d(v) is 2 for 8 candidates, 1 for A2-B3 and A3-B2: the median (2) leaves one bucket
    b = r.buckets.filter(pl.col("method") == "oracle")
    assert b["degree_product"].to_list() == ["1-2"] and b["n_candidates"].to_list() == [10]


def test_precision_per_degree_bucket():
    # products 1, 1, 2, 2, 4, 4, 8, 8: quartile cuts 1.75, 3, 5 give four buckets of two
    product = np.array([1, 1, 2, 2, 4, 4, 8, 8], dtype=float)
    labels = np.array([0, 1, 0, 0, 0, 0, 1, 1], dtype=np.int8)
    b = retro.bucket_table({"hubs first": np.arange(8)[::-1]}, labels, product, 4, ks=(1, 2))
    assert b["degree_product"].to_list() == ["1-1", "2-2", "4-4", "8-8"] and b["n_answers"].to_list() == [1, 0, 0, 2]
    assert b["precision_at_1"].to_list() == [1.0, 0.0, 0.0, 1.0] and b["precision_at_2"].to_list() == [0.5, 0, 0, 1.0]
    assert b["in_top_2"].to_list() == [0, 0, 0, 2] and b["hits_in_top_2"].to_list() == [0, 0, 0, 2]


def test_headline_takes_the_nearest_grid_values():
    assert retro.headline([1, 3, 5], [0, 5, 25], [1, 3]) == (3, 0, 1)
    assert retro.headline([2, 4], [5, 25], [3]) == (2, 5, 3)


# -- the novelty view -------------------------------------------------------------------------------
def test_novelty_values_on_a_hand_built_graph():
    """The chain A0 - B0 - A1 - B1 - A2 - B2: candidates A0-B1, A0-B2, A1-B2, A2-B0."""
    kg = _kg([(0, 0, 2000, 1), (1, 0, 2000, 1), (1, 1, 2000, 1), (2, 1, 2000, 1), (2, 2, 2000, 1)], n_a=3, n_b=3)
    src, dst = np.array([0, 0, 1, 2]), np.array([4, 5, 5, 3])
    assert novelty.distances(kg, src, dst, cap=4).tolist() == [3, 4, 3, 3]  # A0..B2 is 5 hops: capped
    assert novelty.distances(kg, src, dst, cap=10).tolist() == [3, 5, 3, 3]
    dist = novelty.distances(kg, src, dst, cap=4)
    deg = kg.degree.astype(float)
    assert (deg[src] * deg[dst]).tolist() == [2, 1, 2, 4]
    # r(plausibility 4, 3, 2, 1) = 1, .75, .5, .25; r(distance 3, 4, 3, 3) = .5, 1, .5, .5 (ties at their mean
    # rank 2); r(degree product 2, 1, 2, 4) = .625, .25, .625, 1
    nov, adj = novelty.novelty_scores(np.array([4.0, 3, 2, 1]), dist, deg[src] * deg[dst], beta=0.25)
    np.testing.assert_allclose(nov, [0.875, 0.8125, 0.5, 0.3125])
    np.testing.assert_allclose(adj, [0.375, 0.5, -0.125, -0.75])
    # hubs at the median: degrees A 1, 2, 2 and B 2, 2, 1 -> A1, A2 and B0, B1; only A2-B0 joins two
    assert novelty.hub_pairs(kg, src, dst, 50).tolist() == [False, False, False, True]
    assert novelty.hub_pairs(kg, src, dst, 99).tolist() == [False, False, False, True]  # the 99th percentile is 2 too


# -- the page ---------------------------------------------------------------------------------------
def _table(gnn_rank, region):
    n = len(gnn_rank)
    return pl.DataFrame({"rank": list(range(1, n + 1)), "gnn_rank": gnn_rank, "region": region})


def test_the_list_fact_is_true_when_nothing_is_above_b():
    # nothing above b*, the LLM's most confident acceptance is the GNN's 3rd: the lists differ at rank 1
    assert agreement(_table([3, 1, 2], ["routed"] * 3)) == "differs from rank 1 on (0 listed above b*; the LLM reorders the band)"
    # nothing above b* and no review: identical
    assert agreement(_table([1, 2, 3], ["routed", "routed", "auto_reject"])) == "identical over the 3 listed (0 listed above b*)"
    # two above b*, then the LLM's acceptance of the GNN's 4th
    assert agreement(_table([1, 2, 4, 3], ["auto_accept"] * 2 + ["routed"] * 2)) == (
        "the GNN's down to rank 2, differs from rank 3 on (2 listed above b*; the LLM reorders the band)")


def test_a_reviewer_trained_after_the_cutoff_is_warned_about():
    text = trust.contamination("embedded", "2024-09", 2020, 40)
    assert "trained on data up to 2024-09, after discover.cutoff=2020" in text and "40 reviews" in text
    assert trust.contamination("embedded", "2024-09", 2024, 40) is None  # data of 2024, cutoff end of 2024
    assert trust.contamination("embedded", "unknown", 2020, 40) is None
    assert trust.contamination("embedded", 2024, None, 40) is None  # no retrospective evaluation
    assert trust.contamination("embedded", 2024, 2020, 0) is None  # nothing reviewed: nothing contaminated
    with pytest.raises(DataError, match=r"^llm.training_data_date='Sept 2024': expected a year"):
        trust.training_year("Sept 2024")


def test_the_acceptance_warning():
    assert trust.accept_warning({"reviewer_val_reviewed": 10, "reviewer_val_accepted": 8, "discover_reviewed": 10,
                                 "discover_llm_accepted": 10}) is not None  # 18 of 20
    assert trust.accept_warning({"reviewer_val_reviewed": 10, "reviewer_val_accepted": 7, "discover_reviewed": 10,
                                 "discover_llm_accepted": 10}) is None  # 17 of 20
    assert trust.accept_warning({}) is None


def test_bad_options_are_one_line_errors(tmp_path):
    from hygrail.discovery import options

    for override, match in [("discover.horizons=[0,3]", r"discover.horizons=\[0, 3\]: expected a non-empty list"),
                            ("discover.novelty_beta=1.5", "discover.novelty_beta=1.5: expected a weight"),
                            ("discover.distance_cap=1", "discover.distance_cap=1: expected a path length >= 2"),
                            ("discover.review_budget.test=-2", "discover.review_budget.test=-2"),
                            ("llm.training_data_date=soon", "llm.training_data_date='soon'")]:
        with pytest.raises(DataError, match=match):
            options(_cfg(tmp_path, override))


def test_each_verdict_names_its_rule_and_numbers():
    """Issue #36: a 0.2469 score labelled auto_accept beside "GNN-only threshold 0.3423": b* lay below
    the threshold. The page says which rule decided, with the numbers, and where the two disagree."""
    from hygrail.triage.routing import Band

    band = Band(0.2, 0.24, True, True)
    assert trust.gnn_reason(1, 0.2469, band, 0.3423) == (
        "GNN: score 0.2469 above b* 0.2400 (the band accepts it; the GNN-only threshold 0.3423 applies only to "
        "unreviewed routed candidates)")
    assert trust.gnn_reason(1, 0.5, band, 0.3423) == "GNN: score 0.5000 above b* 0.2400"
    assert trust.gnn_reason(0, 0.1, band, 0.3423) == "GNN: score 0.1000 below a* 0.2000"
    assert trust.gnn_reason(-1, 0.22, band, 0.3423) == (
        "routed, beyond the review budget (GNN-only: reject, score 0.2200 vs threshold 0.3423)")
    note = trust.band_note(band, 0.3423, {"discover_shift_negatives": 2000.0, "discover_shift_above_b_train": 0.01,
                                          "discover_shift_above_b_cut": 0.05, "discover_shift_median_train": 0.01,
                                          "discover_shift_median_cut": 0.02})
    assert "so a score in (0.2400, 0.3423) is accepted by the band although the GNN-only decision would reject it" in note
    assert "of 2,000 validation non-links, 1.0% score above b* on the training graph and 5.0% on the cut graph" in note
    assert "b* lies below" not in trust.band_note(Band(0.1, 0.5, True, True), 0.3)
    # an empty band (whole HPO's no-cutoff model: [0.3323, 0.3323]) says why nothing is reviewed
    assert "The band is empty" in trust.band_note(Band(0.3323, 0.3323, True, True), 0.3467)
    assert "The band is empty" not in trust.band_note(Band(0.1, 0.5, True, True), 0.3)
    # gamma = inf: the reviewer was not trusted; its "yes" is not the reason for the reject
    assert trust.untrusted(float("inf")) and not trust.untrusted(0.8) and not trust.untrusted(None)
    yes = ReviewResult("yes", 0.79, "stated", "Plausible.", "", None)
    assert trust.review_reason(yes, float("inf"), "paper", 0.3) == (
        "γ = ∞: the reviewer was not trusted on validation: its verdicts were not used; the rule rejects every "
        "reviewed candidate whatever it said")
    assert trust.review_reason(yes, 0.9, "paper", 0.3) == "LLM rejected: review yes, confidence 0.79 < γ 0.90"


# -- held-out precision per region -------------------------------------------------------------------
def test_region_precision_by_hand():
    """Six test hypotheses: two above b*, three routed (two reviewed), one below a*."""
    from types import SimpleNamespace

    split = SimpleNamespace(part=lambda name: pl.DataFrame({"label": [1, 0, 1, 0, 1, 1]}))
    triage = SimpleNamespace(route_test=np.array([1, 1, -1, -1, -1, 0]), threshold=0.5,
                             scores=SimpleNamespace(test=np.array([0.9, 0.8, 0.4, 0.3, 0.6, 0.1])))
    m = trust.region_precision(split, triage, picked=np.array([2, 3]), llm=np.array([1, 1]))
    assert (m["trust_test_auto_accept_n"], m["trust_test_auto_accept_precision"]) == (2, 0.5)
    assert (m["trust_test_reviewed_accepted"], m["trust_test_reviewed_tp"], m["trust_test_reviewed_precision"]) == (2, 1, 0.5)
    # the unreviewed routed one keeps the GNN-only decision: 0.6 >= 0.5, a true link
    assert (m["trust_test_over_budget_n"], m["trust_test_over_budget_accepted"], m["trust_test_over_budget_precision"]) == (1, 1, 1.0)
    assert m["trust_test_auto_reject_positives"] == 1 and np.isnan(m["trust_test_auto_reject_precision"])
    # nothing reviewed: the whole band is GNN-only (0.4, 0.3 rejected, 0.6 accepted)
    m = trust.region_precision(split, triage)
    assert m["trust_test_reviewed_n"] == 0 and (m["trust_test_over_budget_n"], m["trust_test_over_budget_tp"]) == (3, 1)
    f = trust.reviewer_figures("val", np.array([1, 0, 0, 1]), np.array([1, 1, 0, 0]))
    assert (f["reviewer_val_positives"], f["reviewer_val_precision"], f["reviewer_val_accept_rate"]) == (2, 0.5, 0.5)


# -- a tiny run ------------------------------------------------------------------------------------
def _statement(kg, s, t):
    return f"The material {kg.label(int(s))} can be effectively used for {kg.label(int(t))}."


SLOW = "reviews took 30.0 s each: the machine is loaded; set llm.embedded.threads=1"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One small retrospective discovery whose reviewer claims data of 2024 and says yes (0.9) to the
    true links of validation and test and to every 25th other hypothesis, no to the rest; every routed
    test hypothesis is reviewed (review_budget.test=null). Returns the config, the Discovery, the
    report folder, the logged messages and the pairs the reviewer says yes to."""
    import hygrail.discovery.run as run
    from hygrail.discovery.report import write_report
    from hygrail.data import load_kg
    from hygrail.stages import build_split, plain

    tmp = tmp_path_factory.mktemp("tiny")
    logged = logging.Handler()
    logged.records = []
    logged.emit = logged.records.append
    logging.getLogger("hygrail.discovery").addHandler(logged)
    try:
        with ScriptedServer(default=Reply(ok_review("no", 0.9, "No shared mechanism."))) as server:
            cfg = _cfg(tmp, "discover.cutoff=2020", "discover.review_budget.val=null", "discover.review_budget.test=null",
                       "llm.training_data_date=2024", "discover.top_k=30",
                       "discover.entity_baselines=[popularity,relation_popularity,paths3,gbdt]", url=server.base_url)
            known = load_kg(plain(cfg.data), cutoff=2020).until(2020)
            _, split = build_split(cfg, known)
            yes = set()
            for part in ("val", "test"):
                df = split.part(part)
                for i, (s, t, y) in enumerate(zip(df["src"], df["dst"], df["label"])):
                    if y == 1 or i % 25 == 0:
                        yes.add((s, t))
                        server.script(_statement(known, s, t), Reply(ok_review("yes", 0.9, "Shared mechanism.")))
            from hygrail.review.stage import Reviewer

            real_metrics = Reviewer.metrics

            def slow_metrics(self):  # as the embedded client notes a slow judge (embedded.slow_note)
                self.client.slow_note = SLOW
                return real_metrics(self)

            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(Reviewer, "metrics", slow_metrics)
                result = run.discover(cfg)
            out = write_report(result)
    finally:
        logging.getLogger("hygrail.discovery").removeHandler(logged)
    return cfg, result, out, [r.getMessage() for r in logged.records], yes


def test_region_precision_of_a_tiny_run_matches_a_hand_computation(tiny_run):
    from hygrail.data import load_kg
    from hygrail.stages import build_split, gnn_stage, plain

    cfg, result, out, _, yes = tiny_run
    m = result.metrics
    known = load_kg(plain(cfg.data), cutoff=2020).until(2020)
    _, split = build_split(cfg, known)
    triage, _, _ = gnn_stage(cfg, known, split)  # the run's model, from the cache
    test = split.part("test")
    y, route = test["label"].to_numpy(), triage.route_test
    said_yes = np.array([(s, t) in yes for s, t in zip(test["src"], test["dst"])])
    # task=run's decision: 1 above b*, 0 below a*, the LLM's for the reviewed (all routed): yes at 0.9 >= gamma
    final = np.where(route == -1, said_yes & (0.9 >= m["gamma"]), route == 1)
    for name, sel in (("auto_accept", route == 1), ("reviewed", route == -1), ("auto_reject", route == 0)):
        acc = sel & final
        assert m[f"trust_test_{name}_n"] == sel.sum() and m[f"trust_test_{name}_accepted"] == acc.sum()
        assert m[f"trust_test_{name}_tp"] == (acc & (y == 1)).sum()
        assert m[f"trust_test_{name}_positives"] == (sel & (y == 1)).sum()
    assert m["trust_test_over_budget_n"] == 0  # every routed test hypothesis was reviewed
    acc = (route == -1) & final
    assert acc.sum() > (acc & (y == 1)).sum() > 0, "the run should accept true and false links in the band"
    tp, n = int((acc & (y == 1)).sum()), int(acc.sum())
    assert m["trust_test_reviewed_precision"] == pytest.approx(tp / n)
    page = (out / "index.html").read_text()
    assert "How far to trust it" in page and "reviewed (LLM decision at γ)" in page
    assert f"{tp / n:.2f} ({tp} of {n})" in page and f"{tp / n:.2f} ({tp} of {n})" in (out / "hypotheses.md").read_text()
    # the reviewer on validation: the positives gamma was chosen on, its acceptance there
    val = split.part("val")
    routed_val = triage.route_val == -1
    assert m["reviewer_val_reviewed"] == routed_val.sum()
    assert m["reviewer_val_positives"] == val["label"].to_numpy()[routed_val].sum()
    assert m["reviewer_val_accept_rate"] < 0.9 and "The reviewer accepted" not in page


def test_an_untrusted_reviewer_is_said_to_be_unused(tmp_path):
    """Issue #36: cards showed "LLM review: yes, confidence 0.79" beside "verdict reject (LLM)", no
    reason, at γ = ∞. A reviewer that says yes (0.79) to every non-link and no to every true link of
    validation gets γ = ∞ (accepting any of its yes only adds false positives); the page then says
    so in the issue's words at the top, beside γ, and on every reviewed card, and every row's verdict
    names its rule with the numbers."""
    import html

    import hygrail.discovery.run as run
    from hygrail.discovery.report import write_report
    from hygrail.data import load_kg
    from hygrail.stages import build_split, plain

    with ScriptedServer(default=Reply(ok_review("yes", 0.79, "Plausible."))) as server:
        cfg = _cfg(tmp_path, "discover.review_budget.val=null", "discover.top_k=30", url=server.base_url)
        known = load_kg(plain(cfg.data))
        _, split = build_split(cfg, known)
        for part in ("val", "test"):
            df = split.part(part).filter(pl.col("label") == 1)
            for s, t in zip(df["src"], df["dst"]):
                server.script(_statement(known, s, t), Reply(ok_review("no", 0.9, "Unlikely.")))
        result = run.discover(cfg)
        out = write_report(result)
    said = "the reviewer was not trusted on validation: its verdicts were not used"
    assert result.metrics["gamma"] == float("inf") and result.metrics["discover_reviewed"] > 0
    assert result.summary["facts"]["gamma"].startswith(f"∞: {said}")
    assert any(w.startswith(f"γ = ∞: {said}.") for w in result.summary["warnings"])
    table = result.table
    reviewed = table.filter(pl.col("review").is_not_null() & (pl.col("review") == "yes"))
    assert reviewed.height and (reviewed["verdict"] == "reject").all()
    assert reviewed["decided_by"].str.contains(said, literal=True).all()
    page, md = html.unescape((out / "index.html").read_text()), (out / "hypotheses.md").read_text()
    assert f"Warning: γ = ∞: {said}." in page and f"**Warning:** γ = ∞: {said}." in md
    assert page.count("LLM review (not used: γ = ∞): yes, confidence 0.79") == reviewed.height
    # the other rows: the region's rule with the numbers (b*, a*, or the GNN-only threshold when unreviewed)
    band = result.metrics["band_a"], result.metrics["band_b"]
    for row in table.filter(pl.col("review").is_null()).iter_rows(named=True):
        assert row["decided_by"].startswith({"auto_accept": f"GNN: score {row['score']:.4f} above b* {band[1]:.4f}",
                                             "auto_reject": f"GNN: score {row['score']:.4f} below a* {band[0]:.4f}",
                                             "routed": "routed, beyond the review budget (GNN-only: "}[row["region"]])
    assert "the GNN-only threshold (" in page and "validation non-links" in page  # the lead's band note


def test_the_contamination_warning_is_printed_and_shown(tiny_run):
    _, result, out, logged, _ = tiny_run
    text = "trained on data up to 2024, after discover.cutoff=2020"
    assert any(text in w for w in logged)  # printed where the run is watched
    page = (out / "index.html").read_text()
    assert "<div class='warning'>Warning: Reviewer scripted was trained on data up to 2024" in page
    assert text in (out / "hypotheses.md").read_text()
    assert result.summary["facts"]["reviewer's training data up to"] == "2024"
    assert f"<div class='warning'>Warning: {SLOW}" in page  # the reviewer's own note on its speed


def test_the_tiny_run_reports_the_grid(tiny_run):
    _, result, out, _, _ = tiny_run
    t = pl.read_csv(out / "retrospective.csv")
    methods = ["GNN", "HyGRAIL", "TSH", "Preferential attachment", "Common neighbours", "3-paths",
               "Popularity (all edges)", "Popularity (relation)", "Trees on transitions", "GNN novelty-aware",
               "GNN degree-adjusted"]
    assert t["method"].unique(maintain_order=True).to_list() == methods
    assert set(t["horizon"]) == {1, 3, 5} and set(t["min_degree"]) == {0, 5, 25} and set(t["min_count"]) == {1, 3}
    head = t.filter((pl.col("horizon") == 3) & (pl.col("min_degree") == 0) & (pl.col("min_count") == 1))
    assert result.metrics["retro_gnn_auc"] == pytest.approx(head.filter(pl.col("method") == "GNN")["auc"][0])
    assert (t["n_answers"] <= result.metrics["retro_future_edges"]).all()
    b = pl.read_csv(out / "retrospective_buckets.csv")
    assert set(b["method"]) == set(methods)
    assert (b.group_by("method").agg(pl.col("n_candidates").sum())["n_candidates"] == result.metrics["discover_candidates"]).all()
    table = result.table
    assert table["distance"].is_between(2, 4).all() and table["hub_pair"].dtype == pl.Boolean



def test_every_ranking_reads_the_cut_graph(tiny_run):
    """The heuristics of the retrospective tables rank from everything known at the cutoff (the cut
    graph), not from the split's training graph, which lacks the newest 30% of the relation's edges
    (issue #34: until then they read the training graph)."""
    from hygrail.data import load_kg
    from hygrail.metrics import ranking as auc_ap
    from hygrail.stages import build_split, plain

    cfg, result, out, _, _ = tiny_run
    space, cut = result.space, result.graph
    assert cut is space.kg and result.summary["title"].endswith(", whole graph)")  # no sample: the page says so
    full = load_kg(plain(cfg.data), cutoff=2020)
    future = retro.future_edges(full, cut, space.relation, 2020)
    src, dst = space.pairs()
    y = np.zeros(len(src), dtype=int)
    y[space.positions(src, dst, future.src[future.year <= 2023], future.dst[future.year <= 2023])] = 1
    row = pl.read_csv(out / "retrospective.csv").filter(
        (pl.col("horizon") == 3) & (pl.col("min_degree") == 0) & (pl.col("min_count") == 1)
        & (pl.col("method") == "Preferential attachment")).row(0, named=True)
    want = auc_ap(y, cut.degree[src].astype(float) * cut.degree[dst])
    assert row["n_answers"] == y.sum() and row["auc"] == pytest.approx(want["auc"], abs=1e-12)
    assert row["ap"] == pytest.approx(want["ap"], abs=1e-12)
    train = build_split(cfg, cut)[1].train_graph
    assert auc_ap(y, train.degree[src].astype(float) * train.degree[dst])["auc"] != pytest.approx(want["auc"], abs=1e-6)


def test_whole_space_auc_and_ap_are_exact_with_ties():
    """retrospective's AUC and AP from tie groups equal sklearn's on heavily tied scores, for every
    degree condition (the streamed form must not approximate), through both of ``_sorted_keys``'s
    paths: scores a float32 holds (counts in float64; float32 with signed zeros, equal as floats) and
    float64 scores re-sorted within their float32 groups."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(3)
    n = 5000
    src, dst = rng.integers(0, 60, n), rng.integers(60, 120, n)
    degree = rng.integers(0, 12, 120)
    year = np.where(rng.random(n) < 0.03, rng.integers(2011, 2016, n), 0)
    count = rng.integers(1, 5, n)
    zeros = rng.choice(np.array([0.0, -0.0, 1.5, -2.5, 3e38], dtype=np.float32), n)
    scores = {"ties": rng.integers(0, 7, n).astype(float), "fine": rng.random(n), "signed zeros": zeros}
    grid = {"horizons": [1, 3], "min_degrees": [0, 4], "min_counts": [1, 3]}
    r = retro.retrospective(scores, src, dst, year, count, degree, 2010, grid, ks=(5, 50), seed=1)
    for row in r.table.iter_rows(named=True):
        keep = (degree[src] >= row["min_degree"]) & (degree[dst] >= row["min_degree"])
        y = retro.answers(year, count, 2010, row["horizon"], row["min_count"])[keep]
        s = scores[row["method"]][keep]
        assert row["n_answers"] == y.sum()
        assert row["auc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        assert row["ap"] == pytest.approx(average_precision_score(y, s), abs=1e-12)
        top = ranking(s, src[keep], dst[keep], 1)[:50]
        assert row["precision_at_50"] == y[top].sum() / 50


def test_cards_read_retrieval_settings_whatever_the_review_evidence():
    """evidence=profile retrieves no graph evidence: the cards fall back to the template's settings
    (a whole-HPO run with profile reviews failed at the cards, its reviews done)."""
    from omegaconf import OmegaConf

    from hygrail.data import CONF
    from hygrail.discovery.ranked import card_evidence

    template = OmegaConf.to_container(OmegaConf.load(CONF / "evidence" / "template.yaml"))
    profile = OmegaConf.to_container(OmegaConf.load(CONF / "evidence" / "profile.yaml"))
    assert card_evidence(profile) == template | {"mode": "template"}
    assert card_evidence(template | {"k": 9})["k"] == 9  # a retrieving mode keeps its own settings
