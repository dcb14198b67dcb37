"""A list the reviewer can change (issue #28, ``discover.order``): the reviewed ordering on a
hand-built example, the rule's reason, the paired comparison with the GNN; and one small
retrospective discovery under both orders against the scripted reviewer, which says "no" to the
GNN's best candidate: under ``reviewed`` that candidate leaves the head of hypotheses.csv and of
the HTML with its reason, the rule's validation reviews lie nearest the reviewed candidates'
scores, and the page says which order it used and where the list first differs from the GNN's;
under ``paper`` the list is the GNN's."""

import html

import numpy as np
import polars as pl
import pytest

from hygrail.discovery import retro
from hygrail.kg import DataError
from hygrail.review import calibrate
from hygrail.review.contract import ReviewResult
from scripted_server import Reply, ScriptedServer, ok_review
from test_discover import _cfg


# -- the ordering, by hand ------------------------------------------------------------------------------
def test_reviewed_order_by_hand():
    # six candidates; the GNN lists 4, 0, 3, 1, 2, 5 and the LLM reviewed its best three (4, 0, 3)
    gnn_order = np.array([4, 0, 3, 1, 2, 5])
    reviewed = np.isin(np.arange(6), [4, 0, 3])
    accepted = np.isin(np.arange(6), [4, 3, 5])  # 5 is not reviewed: its "accepted" is not read
    priority = np.array([0.9, 0.0, 0.0, 0.8, 0.3, 0.99])
    # accepted by priority (3 at 0.8 before 4 at 0.3), the unreviewed in GNN order (1, 2, 5), the rejected (0) last
    assert retro.reviewed_order(gnn_order, reviewed, accepted, priority).tolist() == [3, 4, 1, 2, 5, 0]
    # equal priorities keep the GNN's order; NaN counts as 0
    assert retro.reviewed_order(gnn_order, reviewed, accepted, np.full(6, 0.5)).tolist() == [4, 3, 1, 2, 5, 0]
    assert retro.reviewed_order(gnn_order, reviewed, accepted, np.where(np.arange(6) == 4, np.nan, 0.2)).tolist() == [
        3, 4, 1, 2, 5, 0]
    # nothing reviewed: the GNN's list
    none = np.zeros(6, bool)
    assert retro.reviewed_order(gnn_order, none, none, priority).tolist() == gnn_order.tolist()
    # two rejected keep their GNN order below everything
    assert retro.reviewed_order(gnn_order, reviewed, np.isin(np.arange(6), [3]), priority).tolist() == [3, 1, 2, 5, 4, 0]


def test_review_moves_by_hand():
    # the list's GNN ranks: the GNN's 3rd accepted to the top, its 1st rejected to the bottom
    assert retro.review_moves(np.array([3, 2, 4, 5, 1]), np.array([0, 0, 0, 0, 1], bool)) == (1, 2, 1)
    # a demotion alone re-orders nothing: the rows under it shift by one
    assert retro.review_moves(np.array([2, 3, 4, 1]), np.array([0, 0, 0, 1], bool)) == (1, 0, 1)
    # a rejected row that stays where it was is not demoted; identical lists
    assert retro.review_moves(np.array([1, 2, 3]), np.array([0, 0, 1], bool)) == (0, 0, 0)
    assert retro.review_moves(np.zeros(0, int), np.zeros(0, bool)) == (0, 0, 0)


def test_paired_precision_by_hand():
    gnn_order = np.array([4, 0, 3, 1, 2, 5])
    order = np.array([3, 4, 1, 2, 5, 0])
    labels = np.array([0, 0, 0, 1, 1, 0])
    p = retro.paired_precision(order, gnn_order, labels, [3, 2])
    assert p["K"].to_list() == [2, 3]
    # K=2: HyGRAIL {3, 4} holds two answers, the GNN {4, 0} one: 3 entered (an answer), 0 left (none)
    assert p.row(0) == (2, 0.5, 1.0, 0.5, 1, 1, 0)
    # K=3: {3, 4, 1} against {4, 0, 3}: 1 entered, 0 left, neither an answer
    assert p.row(1) == (3, pytest.approx(2 / 3), pytest.approx(2 / 3), 0.0, 1, 0, 0)


def _result(review, confidence):
    return ReviewResult(review, confidence, "stated", "", "", None)


def test_the_rule_states_its_reason():
    assert calibrate.reason(_result("no", 0.1), 0.7) == "LLM rejected: review no (confidence 0.10)"
    assert calibrate.reason(_result("yes", 0.6), 0.7) == "LLM rejected: review yes, confidence 0.60 < γ 0.70"
    assert calibrate.reason(_result("yes", 0.7), 0.7) == "LLM accepted: review yes, confidence 0.70 >= γ 0.70"
    assert calibrate.reason(_result("no", 0.4), 0.3, "probability") == "LLM accepted: review no, P(yes) 0.40 >= γ 0.30"
    # calibrated: a fit whose validation reviews held one class gives every review its base rate
    fit = calibrate.Combined("platt", None, None, 0.08, 0.21)
    assert calibrate.reason(_result("no", 0.1), fit, "calibrated", 0.99) == (
        "LLM + GNN rejected: review no, P(yes) 0.10; combined P 0.08 < cut 0.21")
    np.testing.assert_allclose(calibrate.priority([_result("no", 0.1), _result("yes", 0.9)], fit, "calibrated",
                                                  np.array([0.5, 0.9])), [0.08, 0.08])
    np.testing.assert_allclose(calibrate.priority([_result("yes", 0.9)], 0.5, "paper"), [0.9])
    # a real fit: the combined probability of the reason is the fit's
    rng = np.random.default_rng(0)
    y = rng.random(60) < 0.4
    conf, scores = np.clip(0.5 + 0.3 * (y - 0.5) + rng.normal(0, 0.15, 60), 0.01, 0.99), rng.uniform(0.2, 0.9, 60)
    fit = calibrate.choose_gamma([_result("yes" if c >= 0.5 else "no", c) for c in conf], y, rule="calibrated",
                                 scores=scores)
    p = float(fit.probability(np.array([0.2]), np.array([0.6]))[0])
    assert f"combined P {p:.2f} {'>=' if p >= fit.cut else '<'} cut {fit.cut:.2f}" in calibrate.reason(
        _result("no", 0.2), fit, "calibrated", 0.6)


def test_an_unknown_order_is_a_one_line_error(tmp_path):
    from hygrail.discovery import options

    with pytest.raises(DataError, match=r"^discover.order='gnn': expected one of paper, reviewed$"):
        options(_cfg(tmp_path, "discover.order=gnn"))


# -- one small discovery under both orders ---------------------------------------------------------------
def _statement(kg, s, t):
    return f"The material {kg.label(int(s))} can be effectively used for {kg.label(int(t))}."


@pytest.fixture(scope="module")
def both_orders(tmp_path_factory):
    """The tiny retrospective discovery (cutoff 2020) with a reviewer that says yes (0.9) to the true
    links of validation and test and no (0.1) to the rest and to the GNN's best candidate, yes (0.9)
    to every other candidate; first under ``paper`` (which finds that candidate), then ``reviewed``
    (GNN and replies cached). Returns {order: (Discovery, report folder, what review() and
    like_reviewed saw)} and the candidate."""
    import hygrail.discovery.reviewing as reviewing
    import hygrail.discovery.run as run
    from hygrail.data import load_kg
    from hygrail.discovery.report import write_report
    from hygrail.stages import build_split, plain

    tmp = tmp_path_factory.mktemp("orders")
    out = {}
    with ScriptedServer(default=Reply(ok_review("yes", 0.9, "Shared mechanism."))) as server:
        common = ["discover.cutoff=2020", "discover.top_k=30", "discover.review_budget.val=8",
                  "discover.review_budget.candidates=6", "discover.review_budget.test=4", "discover.stack=[with_gnn]"]
        cfg = _cfg(tmp, *common, url=server.base_url)
        known = load_kg(plain(cfg.data), cutoff=2020).until(2020)
        _, split = build_split(cfg, known)
        for part in ("val", "test"):
            df = split.part(part)
            for s, t, y in zip(df["src"], df["dst"], df["label"]):
                server.script(_statement(known, s, t), Reply(ok_review("yes", 0.9, "Shared mechanism.") if y == 1 else
                                                             ok_review("no", 0.1, "Nothing links them.")))
        head = None
        for order in ("paper", "reviewed"):
            seen = {"picks": []}
            real_review, real_like = run.review, reviewing.like_reviewed

            def spy_review(cfg, d, split, triage, routed, gnn, graph, seen=seen):
                seen |= {"triage": triage, "reviewed_scores": gnn.probability(routed.score)}
                return real_review(cfg, d, split, triage, routed, gnn, graph)

            def spy_like(*args, seen=seen, **kw):
                seen["picks"].append(real_like(*args, **kw))
                return seen["picks"][-1]

            run.review, reviewing.like_reviewed = spy_review, spy_like
            try:
                result = run.discover(_cfg(tmp, *common, f"discover.order={order}", url=server.base_url))
                folder = write_report(result)
            finally:
                run.review, reviewing.like_reviewed = real_review, real_like
            out[order] = (result, folder, seen)
            if head is None:  # the GNN's best candidate: from now on the reviewer says no to it
                row = result.table.filter(pl.col("gnn_rank") == 1).row(0, named=True)
                head = row
                server.script(row["statement"], Reply(ok_review("no", 0.1, "The cited uses do not carry over.")))
    return out, head


def test_paper_order_keeps_the_gnn_list(both_orders):
    runs, head = both_orders
    result, folder, _ = runs["paper"]
    table = pl.read_csv(folder / "hypotheses.csv")
    m = result.metrics
    assert m["discover_auto_accept"] > 30, "this test needs more candidates above b* than the list holds"
    listed = table.filter(pl.col("rank") <= 30)
    # every listed candidate lies above b*: the reviews (of routed ones, below it) never reach the list
    assert (listed["rank"] == listed["gnn_rank"]).all() and (listed["region"] == "auto_accept").all()
    assert table.row(0, named=True)["left_id"] == head["left_id"] and table["review"][0] is None
    assert (table.filter(pl.col("review").is_not_null())["region"] == "routed").all()
    for first in (m["discover_listed_first_differs_at"], m["retro_hygrail_first_differs_at"]):
        assert first == 0 or first > 30  # 0: identical
    for k in (10, 6):  # HyGRAIL's list is the GNN's through its top 30: nothing gained or lost at K <= 30
        assert m[f"retro_hygrail_minus_gnn_precision_at_{k}"] == 0.0 and m[f"retro_hygrail_lost_at_{k}"] == 0
    assert result.summary["facts"]["order (discover.order)"].startswith("paper: above b* first")


def test_reviewed_order_demotes_the_rejected_head_with_its_reason(both_orders):
    runs, head = both_orders
    result, folder, _ = runs["reviewed"]
    table = pl.read_csv(folder / "hypotheses.csv")
    assert table.height == 30  # the six reviewed candidates are the GNN's head: listed anyway
    row = table.filter((pl.col("left_id") == head["left_id"]) & (pl.col("right_id") == head["right_id"])).row(0, named=True)
    assert row["gnn_rank"] == 1 and row["region"] == "auto_accept" and row["review"] == "no"
    assert row["verdict"] == "reject" and row["rank"] == table.height  # below the whole list
    gamma = result.metrics["gamma"]
    assert row["decided_by"] == "LLM rejected: review no (confidence 0.10)"
    # the other five reviewed (yes, 0.9) accepted at gamma, first, in GNN order (equal confidence)
    top = table.filter(pl.col("review").is_not_null() & (pl.col("verdict") == "accept"))
    assert gamma <= 0.9 and top["rank"].to_list() == [1, 2, 3, 4, 5] and top["gnn_rank"].to_list() == [2, 3, 4, 5, 6]
    assert (top["decided_by"] == f"LLM accepted: review yes, confidence 0.90 >= γ {gamma:.2f}").all()
    rest = table.filter(pl.col("review").is_null())
    assert rest["rank"].to_list() == list(range(6, 30)) and rest["gnn_rank"].to_list() == list(range(7, 31))
    page = (folder / "index.html").read_text()
    card = page.split(f"id='card-{table.height}'>")[1].split("<div class='card'")[0]
    assert "(GNN rank 1)" in card and "LLM rejected: review no (confidence 0.10)" in card
    assert "The cited uses do not carry over." in card
    m = result.metrics
    assert (m["discover_listed_demoted"], m["discover_listed_reordered"], m["discover_listed_first_differs_at"]) == (1, 0, 1)
    assert m["retro_hygrail_first_differs_at"] == 1
    # the same list in the whole-space evaluation: its top 6 is the GNN's 2..6 and 7
    assert m["retro_review_budget"] == 6
    assert m["retro_hygrail_minus_gnn_precision_at_6"] == pytest.approx(
        (m["retro_hygrail_gained_at_6"] - m["retro_hygrail_lost_at_6"]) / 6)


def test_reviewed_order_draws_validation_reviews_near_the_reviewed_candidates(both_orders):
    runs, _ = both_orders
    for order in ("paper", "reviewed"):
        _, _, seen = runs[order]
        triage, reviewed = seen["triage"], seen["reviewed_scores"]
        pick_val = seen["picks"][0]
        s = triage.scores.val
        pool = np.ones(len(s), bool) if order == "reviewed" else triage.route_val == -1
        assert len(pick_val) == 8 and pool[pick_val].all()
        # nearest the reviewed candidates' score range among the pool
        gap = np.maximum(np.maximum(reviewed.min() - s, s - reviewed.max()), 0.0)
        others = np.setdiff1d(np.flatnonzero(pool), pick_val)
        assert gap[pick_val].max() <= gap[others].min()
    triage, reviewed = runs["reviewed"][2]["triage"], runs["reviewed"][2]["reviewed_scores"]
    pick_val = runs["reviewed"][2]["picks"][0]
    s = triage.scores.val
    # the head lies above b*: the validation reviews are every validation hypothesis above b* (fewer
    # than the budget here), then the routed ones nearest b*; under paper, none above b*
    assert (reviewed > triage.band[1]).all()
    above = np.flatnonzero(triage.route_val == 1)
    assert 0 < len(above) < 8 and set(above) <= set(pick_val.tolist())
    assert (triage.route_val[runs["paper"][2]["picks"][0]] == -1).all()
    assert (s[pick_val] >= np.sort(s)[-8]).all()  # here: the eight best-scored validation hypotheses
    # and the test reviews (held-out precision) are drawn the same way
    pick_test = runs["reviewed"][2]["picks"][1]
    gap = np.maximum(np.maximum(reviewed.min() - triage.scores.test, triage.scores.test - reviewed.max()), 0.0)
    assert len(pick_test) == 4 and gap[pick_test].max() <= np.delete(gap, pick_test).min()


def test_the_report_shows_the_order_and_where_the_list_differs(both_orders):
    runs, _ = both_orders
    for order, first, fact in (("paper", None, "paper: above b* first"),
                               ("reviewed", 1, "reviewed: the GNN's best 6 reviewed, whatever their region")):
        result, folder, _ = runs[order]
        page, md = html.unescape((folder / "index.html").read_text()), (folder / "hypotheses.md").read_text()
        for text in (page, md):
            assert "order (discover.order)" in text and fact in text
            assert f"HyGRAIL (discover.order={order}) against the GNN, paired at each K" in text
        if first is not None:
            moved = "1: 1 rejected moved below the list, 0 re-ordered; the list first differs from the GNN's at rank 1"
            for text in (page, md):
                assert moved in text and "(whole candidate space: first differs at position 1)" in text
                assert "differs from rank 1 on (30 listed above b*; the review reorders the GNN's head)" in text
    # the paired table: K = the review budget marked, the figures those of MLflow's metrics
    result = runs["reviewed"][0]
    paired = result.retro.paired.filter(pl.col("K") == 6).row(0, named=True)
    assert paired["K is"] == "= review budget"
    assert paired["HyGRAIL - GNN"] == result.metrics["retro_hygrail_minus_gnn_precision_at_6"]
    head = result.retro.headline_rows()
    for k in (10, 50):
        p = {m: head.filter(pl.col("method") == m)[f"precision_at_{k}"][0] for m in ("GNN", "HyGRAIL", "Stack (trees + GNN)")}
        assert result.metrics[f"retro_hygrail_minus_gnn_precision_at_{k}"] == pytest.approx(p["HyGRAIL"] - p["GNN"])
        # the reviewed list against the stacked ranker's own list, paired on the same answers
        assert result.metrics[f"retro_hygrail_minus_stack_with_gnn_precision_at_{k}"] == pytest.approx(
            p["HyGRAIL"] - p["Stack (trees + GNN)"])
