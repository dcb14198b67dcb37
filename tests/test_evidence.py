"""Graph evidence retrieval and naturalization (paper §3.2, §3.3, §5.3, App. D.2 Table 9).

The tiny KG below is worked by hand; the numbers in the comments are those hand computations.

    LiFePO4(CHM) -- battery(APL) 999 (the hypothesis edge: present, must never be used)
    LiFePO4 -- conductivity(PRO) 100, capacity(PRO) 300, temperature(PRO) 30   [CHM-PRO]
    LiFePO4 -- olivine(SPL) 50, orthorhombic(SPL) 10                          [CHM-SPL]
    LiFePO4 -- catalysis(APL) 40 [CHM-APL];  LiFePO4 -- LiCoO2(CHM) 60 [CHM-CHM]
    battery -- conductivity 200, capacity 400, temperature 30 [PRO-APL]; LiCoO2 500, NiO 45 [CHM-APL]
    conductivity -- LiCoO2 150; catalysis -- NiO 80; temperature -- TiO2, NiO, sensor, XRD (30 each);
    hardness -- TiO2 40; porosity -- NiO 40
"""

from __future__ import annotations

import json
import math
import string

import numpy as np
import polars as pl
import pytest
from omegaconf import OmegaConf

from hygrail.data.split import temporal_split
from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.evidence.naturalize import NATURALIZE_PROMPT, render
from hygrail.evidence.retrieve import Evidence, Finding, evidence_cuts, graph_stats, retrieve, score_contradictions
from hygrail.kg import KG, DataError
from scripted_server import Reply, ScriptedServer

from conftest import CONF, named_kg, relation_templates

NODES = [
    ("LiFePO4", "CHM"), ("battery", "APL"), ("conductivity", "PRO"), ("capacity", "PRO"),
    ("temperature", "PRO"), ("olivine", "SPL"), ("catalysis", "APL"), ("LiCoO2", "CHM"),
    ("NiO", "CHM"), ("TiO2", "CHM"), ("sensor", "APL"), ("XRD", "CMT"), ("hardness", "PRO"),
    ("porosity", "PRO"), ("orthorhombic", "SPL"),
]  # fmt: skip
ID = {n: i for i, (n, _) in enumerate(NODES)}
EDGES = [
    ("LiFePO4", "battery", 999), ("LiFePO4", "conductivity", 100), ("LiFePO4", "capacity", 300),
    ("LiFePO4", "temperature", 30), ("LiFePO4", "olivine", 50), ("LiFePO4", "orthorhombic", 10),
    ("LiFePO4", "catalysis", 40), ("LiFePO4", "LiCoO2", 60), ("battery", "conductivity", 200),
    ("battery", "capacity", 400), ("battery", "temperature", 30), ("battery", "LiCoO2", 500),
    ("battery", "NiO", 45), ("conductivity", "LiCoO2", 150), ("catalysis", "NiO", 80),
    ("temperature", "TiO2", 30), ("temperature", "NiO", 30), ("temperature", "sensor", 30),
    ("temperature", "XRD", 30), ("hardness", "TiO2", 40), ("porosity", "NiO", 40),
]  # fmt: skip

CFG = {
    "mode": "template",
    "k": 3,
    "alpha": 0.5,
    "paths": 5,
    "max_hops": 3,
    "neighbour_cap": 10,
    "budget": 1.0,
    "sides": "both",
    "style": {"count_quantile": 0.5, "weight_mean_factor": 1.0},
    "strength": {"strong_quantile": 0.75, "moderate_quantile": 0.5, "calibration_pairs": 500},
    "hub": {"penalty": 0.9},  # a tiny graph has no e x q90 hubs: flag the intermediates losing >= 10%
    "convergence": {"min_paths": 2},
    "contradiction": {"score_high": 0.5, "score_low": 0.2},  # explicit cuts (the YAML names calibrated ones)
}

ln = math.log


def cfg(**changes):
    return {**CFG, **changes}


@pytest.fixture(scope="module")
def kg(matkg_schema):
    return named_kg(matkg_schema, NODES, EDGES)


@pytest.fixture(scope="module")
def rel(matkg_schema):
    return matkg_schema.relation("chm_apl")


@pytest.fixture(scope="module")
def templates():
    return relation_templates("chm_apl")


def feats(endpoint):
    return [(f.name, f.edge_type, f.count, f.style) for f in endpoint.features]


# -- node-level evidence ----------------------------------------------------------------------------
def test_node_level_top_k_eviscore_and_styles(kg, rel):
    ev = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, CFG)
    # LiFePO4: singletons of their type (battery excluded) score 1.0, ties broken by count:
    # LiCoO2 (CHM-CHM, 60), catalysis (CHM-APL, 40); then olivine in CHM-SPL {50, 10}:
    # 0.5 * 1 + 0.5 * 50/60 = 0.91667 (capacity 0.84884 and the rest fall below k = 3).
    # Styles: count cut = median of the edge type's counts in the graph (CHM-CHM 60, CHM-APL 80,
    # CHM-SPL 30); weight high at w >= 1/n, n = the endpoint's edges of that type (count >= their mean).
    assert feats(ev.left) == [
        ("LiCoO2", "CHM-CHM", 60, "well_established"),
        ("catalysis", "CHM-APL", 40, "promising"),  # 40 < 80, w = 1
        ("olivine", "CHM-SPL", 50, "well_established"),
    ]
    olivine = ev.left.features[2]
    assert olivine.norm_count == 1.0 and olivine.weight == pytest.approx(50 / 60)
    assert olivine.score == pytest.approx(0.5 + 0.5 * 50 / 60)
    # battery (APL-PRO {200, 400, 30}, APL-CHM {500, 45}; LiFePO4 excluded):
    #   LiCoO2 0.5 + 0.5 * 500/545 = 0.95872; capacity 0.5 + 0.5 * 400/630 = 0.81746;
    #   conductivity 0.5 * ln201/ln401 + 0.5 * 200/630 = 0.60112 (NiO 0.34922, temperature 0.31026).
    assert feats(ev.right) == [
        ("LiCoO2", "APL-CHM", 500, "well_established"),
        ("capacity", "APL-PRO", 400, "well_established"),  # PRO-APL median 115
        ("conductivity", "APL-PRO", 200, "common"),  # 200 >= 115, w = 0.317 < 1/3 (mean 210)
    ]
    cond = ev.right.features[2]
    assert cond.norm_count == pytest.approx(ln(201) / ln(401))
    assert cond.score == pytest.approx(0.5 * ln(201) / ln(401) + 0.5 * 200 / 630)
    assert cond.score == pytest.approx(0.60112, abs=1e-5)


def test_hypothesis_edge_is_excluded_from_counts_and_sums(kg, rel):
    # Hypothesis LiFePO4 -> sensor: now the LiFePO4-battery edge is ordinary evidence and, with
    # count 999, tops CHM-APL: NormCount 1, w = 999/1039; catalysis drops to
    # 0.5 * ln41/ln1000 + 0.5 * 40/1039.
    ev = retrieve(kg, ID["LiFePO4"], ID["sensor"], rel, cfg(k=8))
    by = {f.name: f for f in ev.left.features}
    assert by["battery"].score == pytest.approx(0.5 + 0.5 * 999 / 1039)
    assert by["catalysis"].score == pytest.approx(0.5 * ln(41) / ln(1000) + 0.5 * 40 / 1039)
    # With battery as the hypothesis, catalysis is the only CHM-APL edge and scores 1.
    ev = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(k=7))
    assert "battery" not in [f.name for f in ev.left.features]
    assert {f.name: f for f in ev.left.features}["catalysis"].score == 1.0


# -- hypothesis-level evidence ---------------------------------------------------------------------
# pct(e): mid-rank percentile of the count in its edge type, (below + at_or_below + 1) / (2 n):
# CHM-PRO sorted [30 30 30 40 40 100 150 300]: 30 -> 4/16, 100 -> 12/16, 150 -> 14/16, 300 -> 1
# PRO-APL [30 30 200 400]: 30 -> 3/8, 200 -> 6/8, 400 -> 1;  CHM-APL [40 45 80 500 999]: k/5
# CHM-CHM [60]: 1
W = {
    ("LiFePO4", "capacity"): 1.0, ("capacity", "battery"): 1.0,
    ("LiFePO4", "conductivity"): 0.75, ("conductivity", "battery"): 0.75,
    ("LiFePO4", "LiCoO2"): 1.0, ("LiCoO2", "battery"): 0.8, ("conductivity", "LiCoO2"): 0.875,
    ("LiFePO4", "catalysis"): 0.2, ("catalysis", "NiO"): 0.6, ("NiO", "battery"): 0.4,
    ("LiFePO4", "temperature"): 0.25, ("temperature", "battery"): 0.375, ("temperature", "NiO"): 0.25,
    ("temperature", "sensor"): 0.375, ("LiFePO4", "battery"): 1.0,
}  # fmt: skip
# Degree penalty 1 / (1 + ln(max(1, deg / q90 deg of the type))), np.quantile (linear):
# PRO degrees [1 1 2 3 6] -> q90 4.8, so only temperature (6) pays; CHM [2 3 4 8] -> 6.8;
# APL [1 2 6] -> 5.2, so battery (6) pays when it is an intermediate.
PEN = {
    "capacity": 1.0, "conductivity": 1.0, "temperature": 1 / (1 + ln(6 / 4.8)),
    "LiCoO2": 1.0, "NiO": 1.0, "catalysis": 1.0, "battery": 1 / (1 + ln(6 / 5.2)),
}  # fmt: skip


def hand_score(*names):
    ws = [W.get((a, b)) or W[(b, a)] for a, b in zip(names, names[1:])]
    return math.prod(ws) ** (1 / len(ws)) * math.prod(PEN[m] for m in names[1:-1])


# Strength cuts: quantiles of the top-5 path scores of the graph's CHM-APL edges, each edge left out
# (17 scores: LiFePO4-battery the 5 below; battery-LiCoO2 0.86022 0.86022 0.81009 0.74754 0.71008;
# battery-NiO 0.42429 0.27909 0.25033; LiFePO4-catalysis 0.54365 0.27365; catalysis-NiO 0.32425 0.16321).
# strong = q0.75 = the 13th of 17 = battery-LiFePO4-LiCoO2 = 1 x pen(LiFePO4) = 1 / (1 + ln(8 / 6.8));
# moderate = q0.5 = the 9th = battery-LiFePO4-conductivity-LiCoO2 = cbrt(1 x 0.75 x 0.875) x pen(LiFePO4).
STRONG, MODERATE = 1 / (1 + ln(8 / 6.8)), (0.65625 ** (1 / 3)) / (1 + ln(8 / 6.8))
# All 8 simple 2/3-hop paths LiFePO4..battery avoiding the edge itself, best first
# (strong >= 0.86022, moderate >= 0.74754; hub: penalty <= 0.9, so temperature (0.818) is one).
ALL_PATHS = [
    (("LiFePO4", "capacity", "battery"), "strong", False),  # 1.0
    (("LiFePO4", "LiCoO2", "battery"), "strong", False),  # sqrt(0.8) = 0.89443
    (("LiFePO4", "LiCoO2", "conductivity", "battery"), "strong", False),  # cbrt(0.65625) = 0.86901
    (("LiFePO4", "conductivity", "LiCoO2", "battery"), "moderate", False),  # cbrt(0.525) = 0.80671
    (("LiFePO4", "conductivity", "battery"), "moderate", False),  # 0.75
    (("LiFePO4", "catalysis", "NiO", "battery"), "weak", False),  # cbrt(0.048) = 0.36342
    (("LiFePO4", "temperature", "battery"), "weak", True),  # sqrt(0.09375) x 0.81757 = 0.25033
    (("LiFePO4", "temperature", "NiO", "battery"), "weak", True),  # cbrt(0.025) x 0.81757 = 0.23906
]


def path_rows(ev):
    return [(tuple(p.names), p.strength, p.hub) for p in ev.paths]


def test_paths_scores_strengths_hubs(kg, rel):
    ev = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, CFG)
    assert ev.paths_found == 8 and not ev.capped
    assert path_rows(ev) == ALL_PATHS[:5]
    for p in ev.paths:
        assert p.score == pytest.approx(hand_score(*p.names))
    assert [round(p.score, 5) for p in ev.paths] == [1.0, 0.89443, 0.86901, 0.80671, 0.75]
    assert ev.paths[2].edge_types == ["CHM-CHM", "CHM-PRO", "PRO-APL"]
    assert ev.paths[2].counts == [60, 150, 200]
    assert ev.paths[2].score == pytest.approx(0.65625 ** (1 / 3))
    # convergence: two informative paths through a single property (capacity, conductivity)
    assert [f.detail for f in ev.convergence] == [
        {"via": "property", "intermediates": ["capacity", "conductivity"], "paths": 2}
    ]
    assert ev.contradictions == []
    assert (ev.left.degree, ev.right.degree) == (7, 5)  # 8 and 6 in the graph, minus the hypothesis edge


def test_paths_match_brute_force_on_random_graph(matkg_schema, rel):
    """Vectorised search == plain enumeration of all simple 2/3-hop paths (caps not binding)."""
    rng = np.random.default_rng(3)
    types = ["CHM"] * 12 + ["APL"] * 8 + ["PRO"] * 10
    pairs = {tuple(sorted(p)) for p in rng.integers(0, 30, (120, 2)) if p[0] != p[1]}
    u, v = zip(*pairs)
    edges = pl.DataFrame(
        {
            "u": u,
            "v": v,
            "type": [matkg_schema.edge_type(types[a], types[b]) for a, b in pairs],
            "count": rng.integers(30, 500, len(pairs)),
        }
    )
    g = KG(matkg_schema, pl.DataFrame({"name": [f"n{i}" for i in range(30)], "type": types}), edges)
    adj = {i: set(g.neighbors(i)[0].tolist()) for i in range(30)}
    checked = 0
    for a in range(12):
        for b in range(12, 20):
            ev = retrieve(g, a, b, rel, cfg(paths=10_000, neighbour_cap=100))
            expect = {(a, m, b) for m in adj[a] & adj[b]}
            expect |= {(a, x, y, b) for x in adj[a] - {b} for y in adj[x] & adj[b] if y not in (a, x)}
            got = [tuple(p.nodes) for p in ev.paths]
            assert len(got) == len(set(got)) == ev.paths_found
            assert set(got) == expect
            scores = [p.score for p in ev.paths]
            assert scores == sorted(scores, reverse=True)
            checked += len(expect)
    assert checked > 100


def test_neighbour_cap_keeps_best_neighbours(kg, rel):
    # cap 1 per edge type, ranked by pct(e) x degree penalty: LiFePO4 keeps capacity
    # (CHM-PRO), olivine, catalysis, LiCoO2; battery keeps capacity (PRO-APL) and LiCoO2 (CHM-APL).
    # No edge joins the two sets, so every 3-hop path goes; 2-hop paths are exact and all stay.
    ev = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(neighbour_cap=1, paths=10))
    assert ev.capped
    assert path_rows(ev) == [r for r in ALL_PATHS if len(r[0]) == 3]


def test_hub_cut_rules(kg, rel):
    stats = graph_stats(kg)
    pro = kg.schema.node_types.index("PRO")
    # PRO degrees sorted [1, 1, 2, 3, 6]: q90 4.8; a hub's penalty 1 / (1 + ln(deg / 4.8)) <= penalty
    assert stats.hub_cut(0.5)[pro] == pytest.approx(math.e * 4.8)  # the default: halves the path score
    assert stats.hub_cut(0.9)[pro] == pytest.approx(math.exp(1 / 0.9 - 1) * 4.8)  # 5.36: temperature (6)
    assert stats.hub_cut(1.0)[pro] == pytest.approx(4.8)  # any penalty at all
    for bad in (0, 1.5):
        with pytest.raises(DataError, match="evidence.hub.penalty"):
            stats.hub_cut(bad)
    ev = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(hub={"penalty": 0.5}, budget=2))
    assert not any(p.hub for p in ev.paths)  # e x 4.8 = 13.0 > 6: no hubs in so small a graph


def test_strength_cuts_are_quantiles_of_the_relations_own_paths(kg, rel):
    cuts = evidence_cuts(kg, rel, CFG)
    assert (cuts.strong, cuts.moderate) == (pytest.approx(STRONG), pytest.approx(MODERATE))
    assert (cuts.calibration_pairs, cuts.calibration_paths) == (5, 17)
    # the budget ablation keeps the cuts (p before the multiplier); other quantiles move them
    assert evidence_cuts(kg, rel, cfg(budget=3)) == cuts
    lower = evidence_cuts(kg, rel, cfg(strength={**CFG["strength"], "strong_quantile": 0.5, "moderate_quantile": 0.0}))
    assert (lower.strong, lower.moderate) == (pytest.approx(MODERATE), pytest.approx(0.16321, abs=1e-5))
    # a sample of 2 of the 5 CHM-APL edges pools fewer paths
    assert evidence_cuts(kg, rel, cfg(strength={**CFG["strength"], "calibration_pairs": 2})).calibration_pairs == 2
    assert cuts.count_high["CHM-APL"] == 80 and cuts.hub_degree["PRO"] == pytest.approx(math.exp(1 / 0.9 - 1) * 4.8)
    assert cuts.flat()["hub_degree.PRO"] == cuts.hub_degree["PRO"] and "seconds" in cuts.flat()
    with pytest.raises(DataError, match="moderate_quantile 0.9 and strong_quantile 0.5"):
        evidence_cuts(kg, rel, cfg(strength={**CFG["strength"], "strong_quantile": 0.5, "moderate_quantile": 0.9}))


# -- findings ---------------------------------------------------------------------------------------
def test_competing_and_score_contradictions(kg, rel, templates):
    # LiFePO4 -> sensor: the only paths run through the hub temperature, and LiFePO4's kept
    # evidence holds a well-established CHM-APL edge to battery (999 >= median 80, w 0.96 >= 1/2).
    ev = retrieve(kg, ID["LiFePO4"], ID["sensor"], rel, CFG)
    # battery-temperature-sensor: cbrt(1 x 3/8 x 3/8) x pen(battery) x pen(temperature) = 0.37193
    assert path_rows(ev) == [
        (("LiFePO4", "battery", "temperature", "sensor"), "weak", True),
        (("LiFePO4", "temperature", "sensor"), "weak", True),
    ]
    assert [p.score for p in ev.paths] == pytest.approx([hand_score(*p.names) for p in ev.paths])
    assert ev.paths[0].score == pytest.approx(0.37193, abs=1e-5)
    assert ev.contradictions == [
        Finding("competing", {"entity": "LiFePO4", "competitors": ["battery"], "other": "sensor"})
    ]
    text = render(ev, "template", templates, 0.9, CFG)
    assert (
        "However, there is potential inconsistency: LiFePO4 is well established with battery instead, "
        "while no strong or moderate path links it to sensor; the GNN score (0.9000) favours the link, "
        "but no strong or moderate non-generic path connects LiFePO4 and sensor. "
        "This warrants caution in the confidence assessment." in text
    )
    assert "A path exists via temperature, but this is a generic/common node (path score=" in text
    # A middling score adds nothing.
    assert "GNN score (" not in render(ev, "template", templates, 0.3, CFG)
    # The mode takes the cell's validation-calibrated cut by name (what the pipeline passes in).
    named = CFG | {"contradiction": {"score_high": "gnn_threshold", "score_low": "gnn_threshold"},
                   "strategy": "hygrail.evidence.naturalize.Template"}
    h = Hypothesis(ID["LiFePO4"], ID["sensor"], 0.3)
    high = load_mode(named, templates, {"gnn_threshold": 0.25}).prepare(kg, rel, [h])[0].text
    low = load_mode(named, templates, {"gnn_threshold": 0.35}).prepare(kg, rel, [h])[0].text
    assert "the GNN score (0.3000) favours the link" in high and "GNN score (" not in low


def test_score_contradictions_take_validation_calibrated_cuts(kg, rel, caplog, monkeypatch):
    import hygrail.evidence.retrieve as retrieve_module

    rule = cfg(contradiction={"score_high": "gnn_threshold", "score_low": "gnn_threshold"})  # the YAML's rule
    strong_paths = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, CFG)
    hub_paths_only = retrieve(kg, ID["LiFePO4"], ID["sensor"], rel, CFG)
    t = {"gnn_threshold": 0.7, "band_low": 0.2, "band_high": 0.9}
    # GNN-only says no (0.69 < 0.7) despite a strong path; says yes (0.7 >= 0.7) with no informative one
    assert [f.kind for f in score_contradictions(strong_paths, 0.69, rule, t)] == ["score_low"]
    assert score_contradictions(strong_paths, 0.7, rule, t) == []
    assert [f.kind for f in score_contradictions(hub_paths_only, 0.7, rule, t)] == ["score_high"]
    assert score_contradictions(hub_paths_only, 0.69, rule, t) == []
    band = cfg(contradiction={"score_high": "band_high", "score_low": "band_low"})
    assert score_contradictions(hub_paths_only, 0.7, band, t) == []
    assert [f.kind for f in score_contradictions(strong_paths, 0.19, band, t)] == ["score_low"]
    # without the calibrated quantity nothing can be judged: no finding, one warning
    monkeypatch.setattr(retrieve_module, "_warned_uncalibrated", False)
    with caplog.at_level("WARNING", logger="hygrail.evidence"):
        assert score_contradictions(hub_paths_only, 0.99, rule) == []
        assert score_contradictions(hub_paths_only, 0.99, rule, {"band_low": 0.1}) == []
    assert [r.message.count("gnn_threshold") for r in caplog.records] == [2]
    with pytest.raises(DataError, match="evidence.contradiction.score_high='median'; expected one of gnn_threshold"):
        score_contradictions(hub_paths_only, 0.5, cfg(contradiction={"score_high": "median", "score_low": 0.1}), t)


# -- naturalization ---------------------------------------------------------------------------------
def test_template_text_by_hand(kg, rel, templates):
    ev = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, CFG)
    expected = "\n".join(
        [
            "Hypothesis: The material LiFePO4 can be effectively used for battery.",
            "Evidence: The following evidence about LiFePO4 and battery has been extracted from the knowledge graph:",
            "LiFePO4 is strongly characterized by LiCoO2 (norm=1.00, count=60), representing a well-established and defining trait.",
            "LiFePO4 shows a notable association with catalysis (norm=1.00, count=40), suggesting a promising but less-explored characteristic.",
            "LiFePO4 is strongly characterized by olivine (norm=0.83, count=50), representing a well-established and defining trait.",
            "battery fundamentally requires LiCoO2 (norm=0.92, count=500), a well-documented core requirement.",
            "battery fundamentally requires capacity (norm=0.63, count=400), a well-documented core requirement.",
            "battery has some relevance to conductivity (norm=0.32, count=200), though this is a general association.",
            "A strong mechanistic link exists: LiFePO4 possesses capacity, which is directly relevant to battery (path score=1.000, indicating robust evidence).",
            "A strong mechanistic link exists: LiFePO4 possesses LiCoO2, which is directly relevant to battery (path score=0.894, indicating robust evidence).",
            "A strong mechanistic link exists: LiFePO4 possesses LiCoO2 linked to conductivity, which is directly relevant to battery (path score=0.869, indicating robust evidence).",
            "A plausible connection exists: LiFePO4 exhibits conductivity linked to LiCoO2, which relates to battery (path score=0.807, suggesting moderate evidence).",
            "A plausible connection exists: LiFePO4 exhibits conductivity, which relates to battery (path score=0.750, suggesting moderate evidence).",
            "Notably, multiple connecting paths converge on similar mechanisms (property: capacity, conductivity), strengthening the evidence for this relationship.",
            "However, there is potential inconsistency: the GNN score (0.1000) is low, although a strong path via capacity connects LiFePO4 and battery. This warrants caution in the confidence assessment.",
            "(GNN prediction score: 0.1000)",
        ]
    )  # fmt: skip
    assert render(ev, "template", templates, 0.1, CFG) == expected
    assert render(ev, "none", templates, 0.1, CFG) == "The material LiFePO4 can be effectively used for battery."
    # No score: no score line and no score contradiction.
    assert render(ev, "template", templates, None, CFG) == "\n".join(expected.split("\n")[:-2])


def test_weak_hub_and_no_path_sentences(kg, rel, templates):
    ev = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(budget=2))
    text = render(ev, "template", templates, None, CFG)
    assert (
        "A weak connection exists: LiFePO4 is linked to battery via catalysis linked to NiO (path score=0.363), "
        "but this provides limited mechanistic support." in text
    )
    assert (
        "A path exists via temperature, but this is a generic/common node (path score=0.250), "
        "providing weak discriminative evidence." in text
    )
    # TiO2 {temperature, hardness} and catalysis {LiFePO4, NiO} share no neighbour.
    ev = retrieve(kg, ID["TiO2"], ID["catalysis"], rel, cfg(max_hops=2))
    assert ev.paths == [] and ev.paths_found == 0
    assert (
        "No connecting paths were found in the knowledge graph between TiO2 and catalysis, "
        "limiting the mechanistic evidence available." in render(ev, "template", templates, None, CFG)
    )


class _Chat:
    """Stands in for the review client's batched chat; None = a failed call."""

    def __init__(self, *replies):
        self.replies, self.seen = list(replies), []

    def chat_many(self, conversations, max_tokens=None):
        self.seen += conversations
        return self.replies[: len(conversations)]


def test_llm_naturalization_prompt_and_wrapping(kg, rel, templates):
    mode = load_mode(CFG | {"mode": "llm", "strategy": "hygrail.evidence.naturalize.LLMNaturalization",
                            "naturalize_max_tokens": 400}, templates)
    chat = _Chat("  Graph evidence: capacity and conductivity link LiFePO4 to battery.  ", None)
    hyps = [Hypothesis(ID["LiFePO4"], ID["battery"], 0.42)] * 2
    good, failed = mode.prepare(kg, rel, hyps, chat)
    assert len(chat.seen) == 2  # one batched pre-stage call per hypothesis
    system, user = chat.seen[0]
    assert system == {"role": "system", "content": NATURALIZE_PROMPT["system"]}
    body = user["content"]
    assert body.startswith("Hypothesis: The material LiFePO4 can be effectively used for battery.")
    assert "- olivine (symmetry/phase label): count=50, norm=0.83, well-established" in body
    assert "- LiFePO4 (material) — LiCoO2 (material) — conductivity (property) — battery (application) (score=0.869, strong)" in body
    assert "Convergence: property: capacity, conductivity (2 paths)" in body
    assert "Graph evidence:" in body and "Background knowledge (not from the graph):" in body
    assert good.text == (
        "Hypothesis: The material LiFePO4 can be effectively used for battery.\n"
        "Evidence: The following evidence about LiFePO4 and battery has been extracted from the knowledge graph:\n"
        "Graph evidence: capacity and conductivity link LiFePO4 to battery.\n"
        "(GNN prediction score: 0.4200)"
    )
    assert not good.fallback and good.structured["left"]["name"] == "LiFePO4"
    # a failed naturalization falls back to the template text, and is counted
    ev = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, CFG)
    assert failed.fallback and failed.text == render(ev, "template", templates, 0.42, CFG)
    assert mode.summary([good, failed]) == {"evidence_fallbacks": 1.0, "evidence_skipped": 0.0}
    with pytest.raises(ValueError, match="LLMNaturalization"):
        render(ev, "llm", templates, 0.42, CFG)


def test_unknown_strategy_is_a_one_line_error(templates):
    from hygrail.kg import DataError

    with pytest.raises(DataError, match="evidence.strategy='hygrail.evidence.nope.Mode'"):
        load_mode({"mode": "nope", "strategy": "hygrail.evidence.nope.Mode"}, templates)
    with pytest.raises(DataError, match="is not an EvidenceMode class"):
        load_mode({"mode": "x", "strategy": "hygrail.kg.KG"}, templates)


# -- ablation knobs (§5.3) --------------------------------------------------------------------------
def test_budget_multiplier(kg, rel):
    base = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, CFG)
    half = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(budget=0.5))  # k ceil(1.5)=2, p ceil(2.5)=3
    assert half.left.features == base.left.features[:2]
    assert half.right.features == base.right.features[:2]
    assert half.paths == base.paths[:3]
    double = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(budget=2))  # k 6, p 10
    assert double.left.features[:3] == base.left.features
    # 7 candidates on the left (temperature, 0.33574, is the one left out), all 5 on the right
    assert [f.name for f in double.left.features[3:]] == ["capacity", "conductivity", "orthorhombic"]
    assert len(double.right.features) == 5
    assert path_rows(double) == ALL_PATHS
    assert double.convergence == base.convergence


@pytest.mark.parametrize("side", ["left", "right"])
def test_one_sided_evidence(kg, rel, side):
    base = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, CFG)
    wide = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(k=6))
    one = retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(sides=side))
    other = "right" if side == "left" else "left"
    # all 2k = 6 node-level items from one endpoint (battery has only 5), none from the other
    assert getattr(one, side).features == getattr(wide, side).features
    assert getattr(one, other).features == []
    assert one.paths == base.paths and one.convergence == base.convergence
    with pytest.raises(DataError, match="evidence.sides"):
        retrieve(kg, ID["LiFePO4"], ID["battery"], rel, cfg(sides="top"))


# -- serialisation, leakage, orientation -----------------------------------------------------------
def test_json_round_trip(kg, rel):
    ev = retrieve(kg, ID["LiFePO4"], ID["sensor"], rel, cfg(budget=2))
    d = json.loads(json.dumps(ev.to_dict()))
    assert Evidence.from_dict(d) == ev
    assert d["paths"][1]["names"] == ["LiFePO4", "temperature", "sensor"]
    assert d["display"] == {"APL": "application", "CHM": "material", "PRO": "property", "SPL": "symmetry/phase label"}


def test_wrong_orientation_is_a_data_error(kg, rel):
    with pytest.raises(DataError, match="expects CHM-APL"):
        retrieve(kg, ID["battery"], ID["LiFePO4"], rel, CFG)


def random_kg(schema, sizes: dict[str, int], draws: int, seed: int) -> KG:
    """Nodes n0, n1, ... typed in ``sizes`` order, edges between ``draws`` random distinct pairs."""
    rng = np.random.default_rng(seed)
    types = [t for t, n in sizes.items() for _ in range(n)]
    pairs = sorted({tuple(sorted(p)) for p in rng.integers(0, len(types), (draws, 2)) if p[0] != p[1]})
    edges = pl.DataFrame(
        {
            "u": [a for a, _ in pairs],
            "v": [b for _, b in pairs],
            "type": [schema.edge_type(types[a], types[b]) for a, b in pairs],
            "count": rng.integers(30, 300, len(pairs)),
            "year": rng.integers(2000, 2020, len(pairs)),
        }
    )
    return KG(schema, pl.DataFrame({"name": [f"n{i}" for i in range(len(types))], "type": types}), edges)


def test_held_out_edges_never_appear(matkg_schema, rel):
    full = random_kg(matkg_schema, {"CHM": 40, "APL": 30, "PRO": 30}, draws=700, seed=7)
    split = temporal_split(full, rel, neg_ratio=2)
    held = split.pairs.filter((pl.col("split") != "train") & (pl.col("label") == 1))
    held_set = {frozenset(p) for p in held.select("src", "dst").iter_rows()}
    wide = cfg(budget=4)  # k 12, p 20

    def used(ev):
        out = {frozenset((ev.left.node, f.node)) for f in ev.left.features}
        out |= {frozenset((ev.right.node, f.node)) for f in ev.right.features}
        out |= {frozenset(e) for p in ev.paths for e in zip(p.nodes, p.nodes[1:])}
        return out

    hyps = split.pairs.filter(pl.col("split") != "train").select("src", "dst").iter_rows()
    leaks_full = leaks_train = 0
    for u, v in hyps:
        e_train = used(retrieve(split.train_graph, u, v, rel, wide))
        assert frozenset((u, v)) not in e_train
        leaks_train += len(e_train & held_set)
        leaks_full += len(used(retrieve(full, u, v, rel, wide)) & held_set)
    assert leaks_train == 0
    assert leaks_full > 0  # the same retrieval on the full KG would leak: the test can fail

    # A training positive is still in the training graph; its own edge is never used.
    u, v = split.part("train").filter(pl.col("label") == 1).row(0)[1:3]
    assert split.train_graph.edge_id(u, v) >= 0
    assert frozenset((u, v)) not in used(retrieve(split.train_graph, u, v, rel, wide))


# -- configuration --------------------------------------------------------------------------------
TABLE9_HYPOTHESES = {
    "chm_apl": "The material {left} can be effectively used for {right}.",
    "chm_pro": "The material {left} exhibits the property {right}.",
    "pro_apl": "The property {left} is relevant and beneficial to the application {right}.",
    "smt_pro": "The synthesis method {left} can produce or enhance the property {right}.",
    "chm_smt": "The material {left} can be synthesized using the method {right}.",
    "chm_dsc": "The material {left} can be described by the descriptor {right}.",
    "chm_cmt": "The material {left} can be characterized using the method {right}.",
}


def placeholders(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


@pytest.mark.parametrize("name", sorted(TABLE9_HYPOTHESES))
def test_relation_templates(name, matkg_schema):
    rel_cfg = OmegaConf.to_container(OmegaConf.load(CONF / f"relation/{name}.yaml"))
    assert rel_cfg["name"] == name and name in matkg_schema.relations
    t = rel_cfg["templates"]
    assert t["hypothesis"] == TABLE9_HYPOTHESES[name]
    feature_fields = {"entity", "feature", "feature_type", "norm", "count", "score"}
    for side in ("left_features", "right_features"):
        assert set(t[side]) == {"well_established", "promising", "common", "weak"}
        for s in t[side].values():
            assert {"entity", "feature", "norm", "count"} <= placeholders(s) <= feature_fields
    assert set(t["paths"]) == {"strong", "moderate", "weak", "hub"}
    for s in t["paths"].values():
        assert {"intermediate", "score"} <= placeholders(s) <= {"left", "right", "intermediate", "score"}
    assert placeholders(t["layout"]) == {"hypothesis", "left", "right", "sentences"}
    assert placeholders(t["no_path"]) == {"left", "right"}
    assert placeholders(t["convergence"]) == {"mechanisms"}
    assert placeholders(t["contradiction"]) == {"description"}
    assert set(t["contradictions"]) == {"competing", "score_high", "score_low"}
    assert t["score"].format(score=0.123456) == "(GNN prediction score: 0.1235)"


def test_evidence_configs_compose():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        modes = {m: compose(config_name=None, overrides=[f"+evidence={m}"]).evidence for m in ("none", "template", "llm")}
    assert {m: c.mode for m, c in modes.items()} == {"none": "none", "template": "template", "llm": "llm"}
    # none and llm share the template file's retrieval settings
    strip = lambda c: {k: v for k, v in OmegaConf.to_container(c).items() if k not in ("mode", "strategy", "label")}  # noqa: E731
    assert strip(modes["none"]) == strip(modes["template"]) == strip(modes["llm"])
    assert modes["template"].budget == 1.0 and modes["template"].sides == "both"


def test_cli_prints_evidence_and_text(matkg_schema, tmp_path, capsys):
    from hygrail.data.csv import save_csv
    from hygrail.explain import main

    g = random_kg(matkg_schema, {"CHM": 30, "APL": 20, "PRO": 20}, draws=300, seed=1)
    save_csv(g, tmp_path)
    data = ["--data", "csv", f"data.path={tmp_path}", "+split.neg_ratio=2"]
    main([*data, "--sample", "2", "--score", "0.25"])
    out = capsys.readouterr().out
    assert out.count("=== CHM-APL: ") == 2 and "[test positive]" in out and "[test negative]" in out
    assert out.count("(GNN prediction score: 0.2500)") == 2
    # a mode with an LLM pre-stage: skipped (and said) without --llm, run through the client with it
    main([*data, "--left", "n0", "--right", "n30", "--json", "--evidence", "llm", "evidence.k=2"])
    out = capsys.readouterr().out
    assert out.startswith("(evidence=llm has LLM pre-stages; no --llm given, so this is its template fallback)")
    assert "=== CHM-APL: n0 -> n30\n{" in out and '"structured": {' in out
    assert "Hypothesis: The material n0 can be effectively used for n30." in out
    with ScriptedServer(default=Reply("Graph evidence: n0 and n30 share nothing notable.")) as server:
        main([*data, "--left", "n0", "--right", "n30", "--evidence", "llm", "--llm", "scripted",
              f"llm.base_url={server.base_url}", "--cache", str(tmp_path / "llm")])
        assert server.count == 1 and "You summarise" in server.requests[0]["messages"][0]["content"]
    assert "Graph evidence: n0 and n30 share nothing notable." in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no node 'nope' of type CHM"):
        main([*data, "--left", "nope", "--right", "n30"])


def test_stats_cache_does_not_keep_graphs_alive(kg, rel):
    import gc
    import weakref

    g = kg.without_edges(np.array([0]))
    retrieve(g, ID["LiFePO4"], ID["battery"], rel, CFG)
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert ref() is None
