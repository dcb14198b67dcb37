"""The related systems' evidence modes (hygrail/evidence/hykge.py, aria.py, graph2idea.py): their
retrieval on a hand-built graph, their LLM pre-stages through the real review client against the
scripted server (once per hypothesis, cached, failures fall back to template evidence), and all
three as cells of one real Hydra multirun logged to MLflow, then the strategies table.

The graph (CHM-APL hypotheses), counts and their edge percentiles pct = (below + at_or_below + 1) / 2n
within the edge type (retrieve.py):

    CHM-PRO (n=7): LiFePO4-capacity 300 (1), LiCoO2-capacity 200 (6/7), LiFePO4-conductivity 100 (5/7),
                   TiO2-hardness 50 (4/7), LiCoO2-conductivity 40 (3/7), nanosheets-conductivity 35 (2/7),
                   NiO-hardness 30 (1/7)                       (nanosheets = "LiCoO2 nanosheets", a CHM)
    PRO-APL (n=3): capacity-battery 400 (1), hardness-sensor 60 (2/3), conductivity-battery 30 (1/3)
    CHM-APL (n=3): LiCoO2-battery 500 (1), NiO-catalysis 90 (2/3), TiO2-sensor 80 (1/3)
    CHM-SPL: LiFePO4-olivine 50 (1);  APL-SPL: olivine-sensor 70 (1);  ZnO (CHM), coating (APL): no edges
"""

from __future__ import annotations

import subprocess
import sys

import mlflow
import numpy as np
import polars as pl
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import CONF, ROOT, named_kg, relation_templates
from conftest import scripted_llm as llm_cfg
from hygrail.evidence import aria, graph2idea, hykge
from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.evidence.names import fragments
from hygrail.evidence.naturalize import render
from hygrail.evidence.retrieve import retrieve
from hygrail.kg import DataError
from hygrail.review.stage import Reviewer
from scripted_server import Reply, ScriptedServer, ok_review

NODES = [
    ("LiFePO4", "CHM"), ("battery", "APL"), ("capacity", "PRO"), ("conductivity", "PRO"), ("LiCoO2", "CHM"),
    ("sensor", "APL"), ("hardness", "PRO"), ("TiO2", "CHM"), ("olivine", "SPL"), ("catalysis", "APL"),
    ("NiO", "CHM"), ("LiCoO2 nanosheets", "CHM"), ("ZnO", "CHM"), ("coating", "APL"),
]  # fmt: skip
ID = {n: i for i, (n, _) in enumerate(NODES)}
EDGES = [
    ("LiFePO4", "capacity", 300), ("LiFePO4", "conductivity", 100), ("LiCoO2", "capacity", 200),
    ("LiCoO2", "conductivity", 40), ("TiO2", "hardness", 50), ("NiO", "hardness", 30),
    ("LiCoO2 nanosheets", "conductivity", 35), ("capacity", "battery", 400), ("conductivity", "battery", 30),
    ("hardness", "sensor", 60), ("LiCoO2", "battery", 500), ("TiO2", "sensor", 80), ("NiO", "catalysis", 90),
    ("LiFePO4", "olivine", 50), ("olivine", "sensor", 70),
]  # fmt: skip
NO_HUBS = {"penalty": 0.05}  # a hub's degree is e^19 x its type's 90th percentile: nothing here is one
# conductivity (degree 4, above the 0.9 quantile of property degrees [3, 3, 4], 3.8) has penalty
# 1 / (1 + ln(4 / 3.8)) = 0.951; every other node has penalty 1
CONDUCTIVITY_HUB = {"penalty": 0.96}


def evidence_cfg(name: str, **changes) -> dict:
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = OmegaConf.to_container(compose(config_name=None, overrides=[f"+evidence={name}"]).evidence)
    return cfg | {"hub": NO_HUBS} | changes


@pytest.fixture(scope="module")
def kg(matkg_schema):
    return named_kg(matkg_schema, NODES, EDGES)


@pytest.fixture(scope="module")
def rel(kg):
    return kg.schema.relation("chm_apl")


@pytest.fixture(scope="module")
def templates():
    return relation_templates("chm_apl")


def names(kg, nodes):
    return [kg.label(n) for n in nodes]


def h(left, right, score=0.4):
    return Hypothesis(ID[left], ID[right], score)


# -- ARIA ----------------------------------------------------------------------------------------
def test_aria_tier1_complete_paths(kg):
    cfg = evidence_cfg("aria")
    # via capacity: pct 1 and 1 >= theta1 0.5; via conductivity: 5/7 and 1/3 -> incomplete
    t = aria.tier_of(kg, ID["LiFePO4"], ID["battery"], cfg)
    assert t.tier == 1 and [names(kg, p.nodes) for p in t.complete] == [["LiFePO4", "capacity", "battery"]]
    # 3 hops admit LiFePO4 - capacity - LiCoO2 - battery (1, 6/7, 1)
    t3 = aria.tier_of(kg, ID["LiFePO4"], ID["battery"], cfg | {"max_hops": 3})
    assert [names(kg, p.nodes) for p in t3.complete] == [
        ["LiFePO4", "capacity", "battery"], ["LiFePO4", "capacity", "LiCoO2", "battery"]]
    # theta1 above 6/7 drops the 3-hop one; above every weight, nothing is complete
    assert len(aria.tier_of(kg, ID["LiFePO4"], ID["battery"], cfg | {"max_hops": 3, "theta1": 0.9}).complete) == 1
    # LiFePO4 - olivine - sensor (pct 1, 1): a phase label does not describe an application
    # (schema evidence set of APL: PRO, CHM), so it is complete only without the typing rule
    assert aria.tier_of(kg, ID["LiFePO4"], ID["sensor"], cfg).tier == 3
    untyped = aria.tier_of(kg, ID["LiFePO4"], ID["sensor"], cfg | {"typed": False})
    assert untyped.tier == 1 and names(kg, untyped.complete[0].nodes) == ["LiFePO4", "olivine", "sensor"]
    # a hub intermediate never completes a path: at theta1 0.3, LiFePO4 - conductivity - battery
    # (5/7, 1/3) is complete unless conductivity counts as a hub
    low = cfg | {"theta1": 0.3}
    assert len(aria.tier_of(kg, ID["LiFePO4"], ID["battery"], low).complete) == 2
    hubs = low | {"hub": CONDUCTIVITY_HUB}
    assert [names(kg, p.nodes) for p in aria.tier_of(kg, ID["LiFePO4"], ID["battery"], hubs).complete] == [
        ["LiFePO4", "capacity", "battery"]]
    assert len(aria.tier_of(kg, ID["LiFePO4"], ID["battery"], hubs | {"exclude_hubs": False}).complete) == 2


def test_aria_analogy_and_speculative_tiers(kg):
    cfg = evidence_cfg("aria")
    sim, name_sim, shared = aria.similarity(kg, np.array([ID["LiCoO2 nanosheets"]]), np.array([ID["LiCoO2"]]), cfg,
                                            skip=ID["battery"])
    # neighbours without battery: nanosheets {conductivity}, LiCoO2 {capacity, conductivity}
    assert shared[0] == 0.5
    assert sim[0] == pytest.approx(0.625 * name_sim[0] + 0.375 * 0.5)
    # tau is the quantile of the similarity of random CHM pairs: quantile 1 -> the most similar
    # pair of materials in the graph, quantile 0 -> the least similar one
    chm = kg.nodes_of_type("CHM")
    a, b = np.array([(p, q) for p in chm for q in chm if p < q]).T
    every = aria.similarity(kg, a, b, cfg)[0]
    q1 = cfg | {"analogy": cfg["analogy"] | {"quantile": 1.0}}
    q0 = cfg | {"analogy": cfg["analogy"] | {"quantile": 0.0}}
    assert aria.analogy_threshold(kg, "CHM", q1) == pytest.approx(every.max())
    assert aria.analogy_threshold(kg, "CHM", q0) == pytest.approx(every.min())

    # nanosheets -> battery: no complete path (conductivity: 2/7, 1/3); LiCoO2 is similar (above the
    # 0.99 quantile), linked to battery (pct 1), and its complete path LiCoO2 - capacity - battery
    # transfers: nanosheets has CHM-PRO links too.
    assert sim[0] >= aria.analogy_threshold(kg, "CHM", cfg)
    t = aria.tier_of(kg, ID["LiCoO2 nanosheets"], ID["battery"], cfg)
    assert t.tier == 2 and len(t.analogies) == 1
    an = t.analogies[0]
    assert (names(kg, [an.analogue, an.endpoint, an.other]), an.link_count) == (["LiCoO2", "LiCoO2 nanosheets", "battery"], 500)
    assert [names(kg, p) for p in an.paths] == [["LiCoO2", "capacity", "battery"]]
    assert an.similarity == pytest.approx(sim[0])
    # TiO2 is far less like LiCoO2 (no shared neighbour): below tau, so TiO2 -> battery is tier 3;
    # with every pair counting as similar (quantile 0) the same transfer makes it tier 2
    assert aria.tier_of(kg, ID["TiO2"], ID["battery"], cfg).tier == 3
    assert aria.tier_of(kg, ID["TiO2"], ID["battery"], q0).tier == 2
    # NiO -> sensor: hardness path (1/7, 2/3) incomplete; sensor's material TiO2 is linked by a
    # weak edge (1/3) and NiO's application catalysis has no complete path to NiO: speculative
    assert aria.tier_of(kg, ID["NiO"], ID["sensor"], q0).tier == 3


def test_aria_texts_skips_and_summary(kg, rel, templates):
    mode = load_mode(evidence_cfg("aria"), templates)
    hyps = [h("LiFePO4", "battery"), h("LiCoO2 nanosheets", "battery"), h("NiO", "sensor")]
    one, two, three = mode.prepare(kg, rel, hyps, None)
    assert [p.info["tier"] for p in (one, two, three)] == [1, 2, 3]
    assert one.text.splitlines()[2:] == [
        "Evidence completeness: COMPLETE. The knowledge graph holds 1 mechanistic chain(s) from LiFePO4 to battery "
        "in which every link is at least as well supported as the typical link of its kind (papers per link: how "
        "many papers support each link):",
        "- LiFePO4 (material) → capacity (property) → battery (application) [papers per link: 300, 400]",
        "(GNN prediction score: 0.4000)",
    ]
    assert "Analogy: LiCoO2 is similar to LiCoO2 nanosheets" in two.text and "50% shared neighbours" in two.text
    assert "linked to battery (500 papers) through LiCoO2 (material) → capacity (property) → battery" in two.text
    assert "NONE" in three.text and "speculative" in three.text
    assert [p.skip for p in (one, two, three)] == [None, None, None]  # tier3: review (ARIA's default)
    assert mode.summary([one, two, three]) | {} == {
        "evidence_fallbacks": 0.0, "evidence_skipped": 0.0,
        "evidence_tier_1_share": pytest.approx(1 / 3), "evidence_tier_2_share": pytest.approx(1 / 3),
        "evidence_tier_3_share": pytest.approx(1 / 3)}
    for knob in ("reject", "gnn"):
        skipped = load_mode(evidence_cfg("aria", tier3=knob), templates).prepare(kg, rel, hyps, None)
        assert [p.skip for p in skipped] == [None, None, knob]
    with pytest.raises(DataError, match="evidence.tier3='drop'"):
        load_mode(evidence_cfg("aria", tier3="drop"), templates)
    with pytest.raises(DataError, match="evidence.max_hops=4: expected 2 or 3"):
        load_mode(evidence_cfg("aria", max_hops=4), templates)


# -- HyKGE ---------------------------------------------------------------------------------------
HO = "High capacity and fast conductivity matter, as LiCoO2 shows."


def test_hykge_anchors_and_chain_kinds(kg):
    cfg = evidence_cfg("hykge")
    u, v = ID["LiFePO4"], ID["battery"]
    anchors = hykge.link_anchors(kg, u, v, HO, cfg)
    # exact names: cosine 1; the endpoint LiFePO4 is never an anchor
    assert [(a.name, a.mention) for a in anchors] == [("capacity", "capacity"), ("conductivity", "conductivity"),
                                                      ("LiCoO2", "LiCoO2")]
    assert all(a.similarity == pytest.approx(1.0) for a in anchors)
    assert hykge.link_anchors(kg, u, v, HO, cfg | {"delta": 1.01}) == []
    assert [a.name for a in hykge.link_anchors(kg, u, v, HO, cfg | {"max_anchors": 2})] == ["capacity", "conductivity"]

    chains = hykge.reasoning_chains(kg, u, v, [a.node for a in anchors], cfg)
    got = {(c.kind, tuple(names(kg, c.nodes))) for c in chains}
    assert got == {
        # capacity and conductivity are adjacent to both endpoints
        ("co_occurrence", ("LiFePO4", "capacity", "battery")),
        ("co_occurrence", ("LiFePO4", "conductivity", "battery")),
        # u ... v chains through them (3 hops)
        ("path", ("LiFePO4", "capacity", "LiCoO2", "battery")),
        ("path", ("LiFePO4", "conductivity", "LiCoO2", "battery")),
        # LiCoO2 shares neighbours with both endpoints, and is linked to battery directly
        ("co_ancestor", ("LiFePO4", "capacity", "LiCoO2")),
        ("co_ancestor", ("LiFePO4", "conductivity", "LiCoO2")),
        ("co_ancestor", ("LiCoO2", "capacity", "battery")),
        ("co_ancestor", ("LiCoO2", "conductivity", "battery")),
        ("path", ("LiCoO2", "battery")),
    }
    assert len(chains) == 9
    # chain score = geometric mean of edge percentiles x degree penalty: conductivity's degree 4 is
    # above the 0.9 quantile of property degrees [3, 3, 4] (3.8)
    co = next(c for c in chains if names(kg, c.nodes) == ["LiFePO4", "conductivity", "battery"])
    assert co.score == pytest.approx((5 / 7 * 1 / 3) ** 0.5 / (1 + np.log(4 / 3.8)))
    # without anchors, only the u ... v paths are left (2 and 3 hops)
    assert {c.kind for c in hykge.reasoning_chains(kg, u, v, [], cfg)} == {"path"}
    assert len(hykge.reasoning_chains(kg, u, v, [], cfg)) == 4
    with pytest.raises(DataError, match="evidence.chain_hops=5"):
        load_mode(cfg | {"chain_hops": 5}, relation_templates("chm_apl"))


def test_hykge_rerank_by_fragments(kg, monkeypatch):
    cfg = evidence_cfg("hykge")
    u, v = ID["LiFePO4"], ID["battery"]
    statement = "The material LiFePO4 can be effectively used for battery."
    pieces = fragments(statement, 4) + fragments(HO, 4)
    assert pieces == ["material LiFePO4 effectively used", "battery", "High capacity fast conductivity", "matter",
                      "LiCoO2 shows"]
    chains = hykge.reasoning_chains(kg, u, v, [ID["capacity"], ID["conductivity"], ID["LiCoO2"]], cfg)
    # Hand-set vectors: "LiCoO2 shows" is e0, every other fragment e1; a node's cosine with e0 is C
    # (0 if unlisted) and with e1 always 0. Relevance = the best fragment's mean cosine over the chain's
    # own concepts: the endpoints (C = 1) must not count, and a mean over fragments would divide by 5.
    C = {"LiCoO2": 0.9, "capacity": 0.3, "conductivity": 0.1, "LiFePO4": 1.0, "battery": 1.0}
    mat = np.array([[C.get(kg.label(n), 0.0), 0.0, np.sqrt(1 - C.get(kg.label(n), 0.0) ** 2)] for n in range(kg.num_nodes)])
    monkeypatch.setattr(hykge, "name_matrix", lambda graph, model: mat)
    monkeypatch.setattr(hykge, "encode", lambda texts, model: np.array(
        [[1.0, 0.0, 0.0] if t == "LiCoO2 shows" else [0.0, 1.0, 0.0] for t in texts]))
    ranked = hykge.rerank(kg, u, v, chains, pieces, cfg)
    assert (names(kg, ranked[0].nodes), ranked[0].relevance) == (["LiCoO2", "battery"], pytest.approx(0.9))
    for c in ranked:
        concepts = [x for x in names(kg, c.nodes) if x not in ("LiFePO4", "battery")]  # an anchor may end a chain
        assert c.relevance == pytest.approx(np.mean([C.get(x, 0.0) for x in concepts])), names(kg, c.nodes)
    assert [c.relevance for c in ranked] == sorted((c.relevance for c in ranked), reverse=True)


class _Once:
    """The review client's contract for a mode without one: every call fails."""

    def chat_many(self, conversations, max_tokens=None):
        return [None] * len(conversations)


def test_hykge_stage_once_cached_and_fallback(kg, rel, templates, tmp_path):
    mode = load_mode(evidence_cfg("hykge", top_k=3), templates)
    hyps = [h("LiFePO4", "battery"), h("TiO2", "sensor"), h("NiO", "catalysis")]
    with ScriptedServer(default=Reply(ok_review("yes", 0.8))) as server:
        server.script("used for battery.\n\nThink step by step", Reply(HO))
        server.script("used for catalysis.\n\nThink step by step", Reply(""))  # an empty reply: the stage failed
        server.script("Think step by step", Reply("Hardness and a hard coating matter."))
        with Reviewer(llm_cfg(server.base_url), mode, kg, rel, tmp_path / "llm.sqlite", seed=1) as reviewer:
            reviewed = reviewer.review(hyps)
            m = reviewer.metrics()
        stage = [r for r in server.requests if "Think step by step" in r["messages"][-1]["content"]]
        assert len(stage) == 3 and server.count == 6  # one HO and one review per hypothesis
        assert stage[0]["max_tokens"] == 200
        # tokens per stage: the scripted server counts whitespace words
        words = lambda rs: sum(len(str(x["content"]).split()) for r in rs for x in r["messages"])  # noqa: E731
        assert m["llm_prestage_prompt_tokens"] == words(stage)
        assert m["llm_review_prompt_tokens"] == words([r for r in server.requests if r not in stage])
        battery, sensor, catalysis = (r.prepared for r in reviewed)
        assert battery.info == {"anchors": 3, "chains_found": 9, "chains_kept": 3}
        assert battery.text.splitlines()[3] == \
            "- LiCoO2 (material) → battery (application) [papers per link: 500] (path)"
        assert battery.structured["hypothesis_output"] == HO and not battery.fallback
        assert [a["name"] for a in sensor.structured["anchors"]] == ["hardness", "coating"]
        # the failed HO: template evidence, counted
        ev = retrieve(kg, ID["NiO"], ID["catalysis"], rel, mode.cfg)
        assert catalysis.fallback and catalysis.text == render(ev, "template", templates, 0.4, mode.cfg)
        assert m["evidence_fallbacks"] == 1 and m["evidence_anchors_mean"] == 2.5
        # reviews run concurrently, so find catalysis's by content, not by arrival order
        assert sum(r["messages"][-1]["content"] == catalysis.text for r in server.requests) == 1

        # the same reviews again: every call from the cache
        with Reviewer(llm_cfg(server.base_url), mode, kg, rel, tmp_path / "llm.sqlite", seed=1) as again:
            assert [r.prepared.text for r in again.review(hyps)] == [r.prepared.text for r in reviewed]
            assert again.metrics()["llm_calls"] == 0 and server.count == 6


def test_fewshot_examples_prestage_is_booked_as_prestage(kg, rel, templates, tmp_path):
    """The few-shot block is built on the first review; its examples' HyKGE calls are pre-stage
    cost, not review cost (they were once booked as reviews: 34 review calls for 30 reviews)."""
    mode = load_mode(evidence_cfg("hykge", top_k=3), templates)
    with ScriptedServer(default=Reply(ok_review("yes", 0.8))) as server:
        server.script("Think step by step", Reply(HO))
        with Reviewer(llm_cfg(server.base_url), mode, kg, rel, tmp_path / "llm.sqlite", seed=1,
                      fewshot=[(h("LiCoO2", "battery"), 1)]) as reviewer:
            reviewer.review([h("LiFePO4", "battery"), h("TiO2", "sensor")])
            m = reviewer.metrics()
        stage = [r for r in server.requests if "Think step by step" in r["messages"][-1]["content"]]
        assert len(stage) == 3 and server.count == 5  # HO for the example and both hypotheses; 2 reviews
        assert (m["llm_prestage_requests"], m["llm_review_requests"]) == (3, 2)
        assert m["llm_prestage_prompt_tokens"] == sum(len(str(x["content"]).split()) for r in stage for x in r["messages"])


# -- Graph2Idea ----------------------------------------------------------------------------------
# Hand-set relevance: node vectors whose cosine with the statement vector e0 is REL.
REL = {"LiFePO4": 0.9, "battery": 0.9, "capacity": 0.8, "LiCoO2": 0.7, "conductivity": 0.45, "olivine": 0.2}


def test_graph2idea_contexts_algorithm(kg, monkeypatch):
    def vectors(graph, nodes, model):
        c = np.array([REL[graph.label(int(n))] for n in nodes])
        return np.stack([c, np.sqrt(1 - c**2)], 1)

    monkeypatch.setattr(graph2idea, "node_vectors", vectors)
    cfg, z = evidence_cfg("graph2idea"), np.array([1.0, 0.0])
    u, v = ID["LiFePO4"], ID["battery"]
    a, b, _ = graph2idea.target_subgraph(kg, u, v, cfg)
    assert {frozenset(names(kg, e)) for e in zip(a, b)} == {frozenset(p) for p in [
        ("LiFePO4", "capacity"), ("LiFePO4", "conductivity"), ("LiFePO4", "olivine"), ("capacity", "battery"),
        ("conductivity", "battery"), ("LiCoO2", "battery"), ("LiCoO2", "capacity"), ("LiCoO2", "conductivity")]}
    # edge relevance = mean of its names' relevance; seeds in that order, contexts grow around their
    # core (not u, v) by the most relevant unused edges; lambda 0: no core shared
    ctx = graph2idea.contexts(kg, u, v, z, cfg)
    read = [(names(kg, c.core), [tuple(names(kg, t[:2])) + (t[2],) for t in c.triples], round(c.relevance, 4)) for c in ctx]
    assert read == [
        (["capacity"], [("LiFePO4", "capacity", 300), ("capacity", "battery", 400), ("capacity", "LiCoO2", 200)],
         round((0.85 + 0.85 + 0.75) / 3, 4)),
        (["LiCoO2"], [("LiCoO2", "battery", 500), ("conductivity", "LiCoO2", 40)], round((0.8 + 0.575) / 2, 4)),
        (["conductivity"], [("LiFePO4", "conductivity", 100), ("conductivity", "battery", 30)], 0.675),
        (["olivine"], [("LiFePO4", "olivine", 50)], 0.55),
    ]
    # one triple per context, two contexts: lambda 0 skips capacity - battery (core capacity is taken)
    small = cfg | {"contexts": 2, "max_triples": 1}
    assert [[tuple(names(kg, t[:2])) for t in c.triples] for c in graph2idea.contexts(kg, u, v, z, small)] == [
        [("LiFePO4", "capacity")], [("LiCoO2", "battery")]]
    assert [[tuple(names(kg, t[:2])) for t in c.triples]
            for c in graph2idea.contexts(kg, u, v, z, small | {"lambda_overlap": 1})] == [
        [("LiFePO4", "capacity")], [("capacity", "battery")]]
    # a hub neighbour is left out of the subgraph
    hubs = cfg | {"hub": CONDUCTIVITY_HUB}
    a, b, _ = graph2idea.target_subgraph(kg, u, v, hubs)
    assert "conductivity" not in set(names(kg, a)) | set(names(kg, b))


def test_graph2idea_parse_picks():
    assert graph2idea.parse_picks("1: capacity links both.\nContext 3 - conductivity\n9: out of range", 4) == {
        1: "capacity links both.", 3: "conductivity"}
    assert graph2idea.parse_picks("NONE of them.", 4) == {}
    assert graph2idea.parse_picks('{"review": "yes"}', 4) is None


def test_graph2idea_two_stages_once_cached_and_fallback(kg, rel, templates, tmp_path):
    mode = load_mode(evidence_cfg("graph2idea"), templates)
    hyps = [h("LiFePO4", "battery"), h("TiO2", "sensor"), h("NiO", "catalysis"), h("ZnO", "coating")]
    with ScriptedServer(default=Reply(ok_review("no", 0.3))) as server:
        server.script("used for battery.\n\nContexts", Reply("1: a shared property.\n3: another one"))
        server.script("used for sensor.\n\nContexts", Reply("NONE"))
        server.script("used for catalysis.\n\nContexts", Reply("I cannot tell."))  # unparseable: fallback
        with Reviewer(llm_cfg(server.base_url), mode, kg, rel, tmp_path / "llm.sqlite", seed=1) as reviewer:
            reviewed = reviewer.review(hyps)
            m = reviewer.metrics()
        first = [r for r in server.requests if "Which contexts bear" in r["messages"][-1]["content"]]
        # one stage-1 call per hypothesis with contexts (ZnO - coating has none), one review each
        assert len(first) == 3 and server.count == 3 + 4
        battery, sensor, catalysis, zno = (r.prepared for r in reviewed)
        assert (battery.info, sensor.info) == ({"contexts": 4, "picked": 2, "stage1": "ok"},
                                               {"contexts": 2, "picked": 0, "stage1": "ok"})
        # stage 2 reads the picked contexts only, with their stage-1 notes labelled
        # stage-1 calls run concurrently: battery's is found by content, not by arrival order
        stage1_text = next(t for r in first if "used for battery." in (t := r["messages"][-1]["content"]))
        for k in (1, 3):
            assert battery.structured["contexts"][k - 1]["text"] in stage1_text
            assert battery.structured["contexts"][k - 1]["text"] in battery.text
        for k in (2, 4):
            assert battery.structured["contexts"][k - 1]["text"] not in battery.text
        assert "First reading (an LLM's note, not a graph fact): a shared property." in battery.text
        assert "found none of the 2 graph contexts around TiO2 and sensor relevant" in sensor.text
        assert catalysis.fallback and catalysis.info["stage1"] == "unparseable"
        assert catalysis.text == render(retrieve(kg, ID["NiO"], ID["catalysis"], rel, mode.cfg), "template", templates,
                                        0.4, mode.cfg)
        assert zno.info == {"contexts": 0, "picked": 0, "stage1": "skipped"} and "No graph context" in zno.text
        assert (m["evidence_fallbacks"], m["evidence_stage1_unparseable"]) == (1, 1)
        assert m["llm_prestage_requests"] == 3 and m["llm_review_requests"] == 4
        assert m["llm_prestage_prompt_tokens"] == sum(len(str(x["content"]).split()) for r in first for x in r["messages"])
        with Reviewer(llm_cfg(server.base_url), mode, kg, rel, tmp_path / "llm.sqlite", seed=1) as again:
            again.review(hyps)
            assert again.metrics()["llm_calls"] == 0 and server.count == 7


def test_modes_without_a_client_fall_back(kg, rel, templates):
    """What `python -m hygrail.explain` shows without --llm: each pre-stage mode's template fallback."""
    for name in ("hykge", "graph2idea"):
        mode = load_mode(evidence_cfg(name), templates)
        assert mode.uses_llm
        (p,) = mode.prepare(kg, rel, [h("LiFePO4", "battery")], _Once())
        assert p.fallback and p.text.startswith("Hypothesis: The material LiFePO4")
    assert not load_mode(evidence_cfg("aria"), templates).uses_llm


# -- the strategies table ---------------------------------------------------------------------------
def _cell(label, relation, f1, **metrics):
    return {"tag.method": "hygrail", "tag.method_label": label, "tag.relation": relation, "param.seed": "42",
            "test_precision": f1, "test_recall": f1, "test_f1": f1, "test_call_rate": 0.5,
            "gnn_test_precision": 0.5, "gnn_test_recall": 0.5, "gnn_test_f1": 0.5, **metrics}


def test_strategies_table_pools_quality_and_cost_per_hypothesis():
    from hygrail.report import strategies_table, tiers_table

    cost = {"val_reviewed": 10.0, "test_reviewed": 10.0, "llm_requests": 40.0, "llm_prestage_prompt_tokens": 2000.0,
            "llm_prestage_completion_tokens": 400.0, "llm_review_prompt_tokens": 6000.0,
            "llm_review_completion_tokens": 600.0, "llm_seconds": 200.0, "evidence_seconds": 2.0,
            "test_routed_unreviewed": 0.0}
    runs = pl.DataFrame([
        _cell("HyGRAIL+HyKGE", "chm_apl", 0.6, **cost),
        _cell("HyGRAIL+HyKGE", "chm_pro", 0.4, **cost | {"val_reviewed": 20.0, "llm_requests": 60.0}),
        _cell("HyGRAIL+ARIA", "chm_apl", 0.5, **cost | {"llm_prestage_prompt_tokens": 0.0,
                                                          "llm_prestage_completion_tokens": 0.0,
                                                          "test_by_tier_1_n": 2.0, "test_by_tier_1_f1": 1.0,
                                                          "test_by_tier_1_precision": 1.0, "test_by_tier_1_recall": 1.0,
                                                          "test_by_tier_3_n": 8.0, "test_by_tier_3_f1": 0.25,
                                                          "test_by_tier_3_precision": 0.5, "test_by_tier_3_recall": 1 / 6}),
        _cell("HyGRAIL-Auto", "chm_apl", 0.55, **cost | {"test_routed_unreviewed": 5.0}),
    ], infer_schema_length=None)
    md, df = strategies_table(runs)
    rows = {r["method"]: r for r in df.iter_rows(named=True)}
    assert list(rows) == ["GNN", "HyGRAIL-Auto", "HyGRAIL+ARIA", "HyGRAIL+HyKGE"]
    hy = rows["HyGRAIL+HyKGE"]
    # macro F1 over relations; costs summed over cells, per hypothesis handled (val + test: 20 + 30)
    assert hy["f1"] == pytest.approx(0.5) and hy["relations"] == 2 and hy["handled"] == 50
    assert hy["llm_requests_per_hyp"] == pytest.approx(100 / 50)
    assert hy["prestage_tokens_per_hyp"] == pytest.approx(4800 / 50)
    assert hy["review_tokens_per_hyp"] == pytest.approx(13200 / 50)
    assert hy["llm_seconds_per_hyp"] == pytest.approx(400 / 50) and hy["evidence_seconds_per_hyp"] == pytest.approx(0.08)
    assert rows["GNN"]["f1"] == 0.5 and rows["GNN"]["relations"] == 2
    assert "| HyGRAIL-Auto‡ |" in md and "| HyGRAIL+HyKGE | 2 | 0.500 | 0.500 | 0.500 | 50.0% | 50 | 2.00 | 96 | 264 |" in md
    tiers = tiers_table(runs)
    assert "**HyGRAIL+ARIA**" in tiers and "HyKGE" not in tiers
    assert "| 1 | 2 | 20.0% | 1.000 | 1.000 | 1.000 |" in tiers and "| 3 | 8 | 80.0% | 0.500 | 0.167 | 0.250 |" in tiers


# -- one real multirun over the three modes, then the strategies table -----------------------------
# slow (issue #48): three evidence modes as a real multirun; each mode's unit tests stay in make test
@pytest.mark.slow
def test_strategies_multirun_and_table(tmp_path):
    from hygrail.report import main as report

    outputs = tmp_path / "out"
    with ScriptedServer(default=Reply(ok_review("yes", 0.8))) as server:
        server.script("Think step by step", Reply("Capacity and ionic conductivity of the electrode matter."))
        server.script("Which contexts bear", Reply("1: links both ends."))
        cmd = [sys.executable, "-m", "hygrail.sweep", "-m", "evidence=hykge,aria,graph2idea", "hydra/launcher=basic",
               "llm=scripted", f"llm.base_url={server.base_url}", f"paths.outputs={outputs}",
               "tracking.experiment=strategies_test", "data.scale=0.35", "backbone=rgcn", "backbone.epochs=4",
               "backbone.val_every=2", "routing.m=0.995", "routing.n=0.9",
               "method.review_budget.val=3", "method.review_budget.test=3"]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
    mlflow.set_tracking_uri(f"sqlite:///{outputs}/mlflow.db")
    exp = mlflow.get_experiment_by_name("strategies_test")
    runs = {r.data.tags["evidence"]: r for r in mlflow.search_runs([exp.experiment_id], output_format="list")}
    assert {k: r.data.tags["method_label"] for k, r in runs.items()} == {
        "hykge": "HyGRAIL+HyKGE", "aria": "HyGRAIL+ARIA", "graph2idea": "HyGRAIL+Graph2Idea"}
    for mode, r in runs.items():
        m = r.data.metrics
        handled = m["val_reviewed"] + m["test_reviewed"]
        assert handled == 6 and m["evidence_seconds"] >= 0
        prestage = {"hykge": handled, "aria": 0}.get(mode)
        if prestage is not None:
            assert m["llm_prestage_requests"] == prestage
        assert m["llm_review_requests"] == handled
        table = pl.read_parquet(mlflow.artifacts.download_artifacts(run_id=r.info.run_id,
                                                                    artifact_path="predictions.parquet",
                                                                    dst_path=str(tmp_path / mode)))
        column = {"hykge": "chains_kept", "aria": "tier", "graph2idea": "picked"}[mode]
        reviewed = table.filter(pl.col("review").is_not_null())
        assert reviewed.height == handled and reviewed[column].null_count() == 0
    tiers = runs["aria"].data.metrics
    assert sum(tiers[f"evidence_tier_{t}_share"] for t in (1, 2, 3)) == pytest.approx(1.0)
    assert sum(v for k, v in tiers.items() if k.startswith("test_by_tier_") and k.endswith("_n")) == 3

    report(["--uri", f"sqlite:///{outputs}/mlflow.db", "--experiment", "strategies_test", "--strategies",
            "--out", str(tmp_path / "report")])
    md = (tmp_path / "report/strategies.md").read_text()
    rows = {line.split(" | ")[0].strip("| ‡"): line.split(" | ") for line in md.splitlines() if line.startswith("| ")}
    assert {"GNN", "HyGRAIL+HyKGE", "HyGRAIL+ARIA", "HyGRAIL+Graph2Idea"} <= set(rows)
    assert rows["HyGRAIL+ARIA"][7] == "1.00" and rows["HyGRAIL+HyKGE"][7] == "2.00"  # LLM requests / hypothesis
    assert rows["HyGRAIL+ARIA"][8] == "0"  # no pre-stage tokens
    assert "# Per evidence tier" in md and "**HyGRAIL+ARIA**" in md


@pytest.mark.parametrize("mode_name, marker", [("hykge", "Think step by step"), ("graph2idea", "Which contexts bear")])
@pytest.mark.parametrize("domain, expert", [(None, "an expert materials scientist"),
                                            ({"expert": "an expert clinical geneticist"}, "an expert clinical geneticist")])
def test_pre_stage_prompts_address_the_schemas_expert(kg, rel, templates, tmp_path, mode_name, marker, domain, expert):
    """HyKGE's and Graph2Idea's own LLM calls name the reviewer's field (the schema's ``domain:``, as
    llm.domain): the paper's materials scientist on MatKG, a clinical geneticist on HPO."""
    mode = load_mode(evidence_cfg(mode_name, top_k=3) if mode_name == "hykge" else evidence_cfg(mode_name), templates)
    with ScriptedServer(default=Reply(ok_review("no", 0.3))) as server:
        server.script(marker, Reply("1: a shared property."))
        with Reviewer(llm_cfg(server.base_url) | {"domain": domain}, mode, kg, rel, tmp_path / "llm.sqlite", seed=1) as r:
            r.review([h("LiFePO4", "battery")])
        pre = [q for q in server.requests if marker in q["messages"][-1]["content"]]
    assert pre and all(q["messages"][0]["content"].startswith(f"You are {expert}") for q in pre)
