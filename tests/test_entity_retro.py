"""The per-entity retrospective (hygrail/discovery/entity_retro.py): hits@k, recall@k, P@k, all@k and NDCG@10
by hand; lifts against the best other ranking per measure; the known rows on the horizon their label names
(issue #54); the known row counted on the whole-space vectors equals ranking the rows again."""

import numpy as np
import pytest

from conftest import named_kg
from hygrail.discovery import entities, entity_retro
from hygrail.discovery.retro import Future
from hygrail.discovery.scoring import walk
from hygrail.discovery.space import Block, CandidateSpace, ranking
from hygrail.kg import Relation, Schema
from test_entities import scored  # noqa: F401 (a fixture)


def _two_entities():
    schema = Schema(("A", "B", "C"), {"ab": Relation("ab", "A", "B")})
    nodes = [("a0", "A"), ("a1", "A")] + [(f"b{i}", "B") for i in range(6)] + [("c", "C")]
    kg = named_kg(schema, nodes, [(n, "c", 1) for n, t in nodes if t != "C"])
    space = CandidateSpace(kg, schema.relations["ab"])
    a0, a1, b = 0, 1, np.arange(2, 8)
    hand = {a0: np.arange(6, 0, -1.0), a1: np.arange(1, 7.0)}  # a0 ranks b0..b5, a1 ranks b5..b0

    def score(block: Block) -> np.ndarray:
        return np.stack([hand[int(s)] for s in block.src])

    return space, a0, a1, b, score


def test_hits_recall_precision_all_and_ndcg_by_hand():
    space, a0, a1, b, score = _two_entities()
    # a0's answers b1, b4 (places 1 and 4, 0-based), a1's answer b0 (place 5)
    found = entity_retro.found_at(space, {"m": score}, np.array([a0, a0, a1]), np.array([b[1], b[4], b[0]]),
                                  (1, 2, 5), seed=0, block_pairs=6)
    assert found.sources.tolist() == [a0, a1] and found.n_answers.tolist() == [2, 1]
    assert found.hits["m"].tolist() == [[0, 1, 2], [0, 0, 0]]
    dcg_a0 = 1 / np.log2(3) + 1 / np.log2(6)
    np.testing.assert_allclose(found.dcg["m"], [dcg_a0, 1 / np.log2(7)])
    np.testing.assert_allclose(found.ndcg("m"), [dcg_a0 / (1 + 1 / np.log2(3)), 1 / np.log2(7)])
    row = entity_retro.summarise(found, {"m": "M"}, (1, 2, 5)).row(0, named=True)
    assert (row["hits_at_1"], row["hits_at_2"], row["hits_at_5"]) == (0.0, 0.5, 0.5)
    assert (row["recall_at_1"], row["recall_at_2"], row["recall_at_5"]) == (0.0, 0.25, 0.5)
    assert (row["precision_at_1"], row["precision_at_2"], row["precision_at_5"]) == (0.0, 0.25, 0.2)
    assert row["all_at_5"] == 0.5 and "all_at_2" not in row
    assert row["ndcg_at_10"] == pytest.approx(np.mean(found.ndcg("m")))
    assert row["hits_at_2_se"] == pytest.approx(0.5) and row["recall_at_2_se"] == pytest.approx(0.25)


def test_lifts_are_against_the_best_other_ranking_of_each_measure():
    """Issue #45: a learned method's lift is against the best of every other ranking, learned ones (TSH)
    included; the stack's variants are never each other's baseline; each measure picks its own best."""
    sources, n = np.array([0, 1]), np.array([2, 1])
    m = np.array([[0, 1, 2], [0, 0, 0]])
    tsh = np.array([[0, 1, 2], [0, 0, 1]])  # hits@5 on both entities
    found = entity_retro.Found(sources, n)
    for name, hits, dcg in (("gnn", m, [1.0, 0.0]), ("tsh", tsh, [0.5, 0.4]), ("m", 0 * m, [0.0, 0.0]),
                            ("stack_a", tsh, [0.9, 0.9]), ("stack_b", 0 * tsh, [0.0, 0.0])):
        found.add(name, hits, np.array(dcg))
    best, k, gains = entity_retro.lift(found, (1, 2, 5), {"gnn": "GNN", "tsh": "TSH", "stack_a": "A", "stack_b": "B"})
    assert k == 5 and best["hits"] == {"gnn": "tsh", "tsh": "stack_a", "stack_a": "tsh", "stack_b": "tsh"}
    assert gains["gnn_lift_hits_at_5"] == -0.5 and gains["gnn_lift_hits_at_5_se"] == pytest.approx(0.5)
    assert gains["tsh_lift_hits_at_5"] == 0.0 and gains["stack_b_lift_hits_at_5"] == -1.0
    assert gains["gnn_lift_precision_at_5"] == pytest.approx((0.4 + 0.0) / 2 - (0.4 + 0.2) / 2)
    # by its own measure's mean: NDCG gnn (0.61, 0), tsh (0.31, 0.4), stack_a (0.55, 0.9)
    assert best["ndcg"]["gnn"] == "stack_a" and best["ndcg"]["stack_a"] == "tsh"
    ndcg = lambda name: found.ndcg(name)  # noqa: E731
    assert gains["gnn_lift_ndcg_at_10"] == pytest.approx(np.mean(ndcg("gnn") - ndcg("stack_a")))


def test_ties_follow_the_seeded_tiebreak():
    space, a0, a1, b, _ = _two_entities()
    for seed in range(5):
        tied = entity_retro.found_at(space, {"m": lambda block: np.ones(block.valid.shape)}, np.array([a0, a0, a1]),
                                     np.array([b[1], b[4], b[0]]), (1, 2, 5), seed=seed, block_pairs=6)
        for i, (s, answers) in enumerate(((a0, {b[1], b[4]}), (a1, {b[0]}))):
            order = b[ranking(np.ones(6), np.full(6, s), b, seed)]
            assert tied.hits["m"][i].tolist() == [len(answers & set(order[:k].tolist())) for k in (1, 2, 5)]


def test_the_known_row_counts_only_the_answers_within_its_horizon():
    """Issue #54: "known at the cutoff" counts the entities that gain an edge within the horizon, scored on
    those answers only; their answers of any later year are a row of their own label."""
    space, a0, a1, b, score = _two_entities()
    # cutoff 2010, horizon 3: a0 gains b1 in 2012 and b4 in 2019; a1 gains b0 only in 2020
    future = Future(np.array([a0, a0, a1]), np.array([b[1], b[4], b[0]]), np.array([2012, 2019, 2020]),
                    np.ones(3, np.int64), 0)
    out = entity_retro.evaluate(space, {"m": score}, {"m": "M"}, {"m": "M"}, future, 2010, 3, (1, 2, 5), 0, 6)
    known = out.each.filter(out.each["entities known"] == entity_retro.KNOWN_ROW)
    later = out.each.filter(out.each["entities known"] == entity_retro.KNOWN_ANY_ROW)
    assert known["id"].to_list() == [a0] and known["answers"].to_list() == [1]
    assert later["id"].to_list() == [a0, a1] and later["answers"].to_list() == [2, 1]
    assert out.metrics["retro_entity_sources"] == 1 and out.metrics["retro_entity_answers"] == 1
    assert out.metrics["retro_entity_m_hits_at_2"] == 1.0  # b1 is a0's second: within the horizon, a hit at 2
    assert out.metrics["retro_entity_known_any_m_hits_at_2"] == 0.5
    assert "gain 1 ab edges within 3 years" in out.note.replace("A-B", "ab")


def test_row_hits_on_the_whole_space_vectors_equal_found_at(scored):  # noqa: F811
    """The known row counted on walk-order vectors (``RowHits``, no second scoring pass) equals
    ``found_at`` ranking the same rows again, hits and DCG: continuous scores, and integer ones full of ties."""
    _, space, gnn = scored
    src, dst = space.pairs(dtype=np.int32)
    rng = np.random.default_rng(0)
    pick = rng.choice(len(src), 40, replace=False)
    f_src, f_dst = src[pick].astype(np.int64), dst[pick].astype(np.int64)
    pos = space.positions(src, dst, f_src, f_dst)
    ks = [1, 5, 10]
    scorers = {"gnn": gnn, "paths3": entities.paths3(space.kg, space, {}),
               "popularity": entities.popularity(space.kg, space, {})}
    want = entity_retro.found_at(space, scorers, f_src, f_dst, ks, seed=2, block_pairs=64)
    rows = entity_retro.RowHits(src, dst, pos, ks, len(space.dst), seed=2)
    for name, scorer in scorers.items():
        rows.add(name, walk(space, scorer, 1, 2, 64, keep=True).scores)
    got = rows.found
    assert got.sources.tolist() == want.sources.tolist() and got.n_answers.tolist() == want.n_answers.tolist()
    for name in scorers:
        np.testing.assert_array_equal(got.hits[name], want.hits[name])
        np.testing.assert_allclose(got.dcg[name], want.dcg[name], rtol=1e-12)
    assert want.hits["popularity"][:, -1].sum() > 0 and len(np.unique(space.kg.degree[space.dst])) < len(space.dst)
