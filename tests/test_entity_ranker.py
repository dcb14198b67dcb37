"""The per-entity ranker (issue #55; hygrail/discovery/pools.py, entity_ranker.py): it beats the whole-space
stack on a graph where popularity decides the whole space while each entity's answers follow its neighbours;
its fit reads nothing dated after the cutoff; its pools and features are the documented ones; a fitted ranker
is data (LightGBM's model text and JSON) and predicts the same once read back."""

import numpy as np
import polars as pl
import pytest

from hygrail.data.split import temporal_split
from hygrail.discovery import entity_retro, pools, stack
from hygrail.discovery.entity_ranker import EntityRanker, group_sizes
from hygrail.discovery.retro import future_edges
from hygrail.discovery.space import Block, CandidateSpace
from hygrail.kg import KG, Relation, Schema

AB = Relation("ab", "A", "B")
SCHEMA = Schema(("A", "B"), {"ab": AB})
CUTOFF = 2015


def popular_vs_neighbours(n_a=300, n_b=500, k=15, seed=0, burst=0.1, hubs=40) -> KG:
    """Sources A in ``k`` communities of 40 destinations each. Every year each source gains one edge to a random
    unlinked destination of its community (its neighbours' choice); a burst that strikes a random tenth of the
    sources each year adds ``hubs`` edges to popular destinations (Zipf). Most new edges are bursts' hub edges,
    so popularity decides the whole space; who bursts next is chance, so within most entities the answers are
    the neighbours' choices."""
    rng = np.random.default_rng(seed)
    comm = rng.integers(0, k, n_a)
    own = {c: rng.choice(np.arange(100, n_b), 40, replace=False) for c in range(k)}
    pop = 1.0 / np.arange(1, n_b + 1) ** 1.1
    pop /= pop.sum()
    linked = [set() for _ in range(n_a)]
    u, v, y = [], [], []

    def add(a, b, year):
        if int(b) not in linked[a]:
            linked[a].add(int(b)), u.append(a), v.append(n_a + int(b)), y.append(year)

    for year in range(2000, 2020):
        for a in range(n_a):
            if year < 2000 + a % 10:  # sources start at different years
                continue
            free = [b for b in own[comm[a]] if b not in linked[a]]
            for b in rng.choice(free, min(len(free), 3 if year == 2000 + a % 10 else 1), replace=False):
                add(a, b, year)
            if rng.random() < burst:
                for b in rng.choice(n_b, hubs, replace=False, p=pop):
                    add(a, b, year)
    nodes = pl.DataFrame({"name": [f"A{i}" for i in range(n_a)] + [f"B{i}" for i in range(n_b)],
                          "type": ["A"] * n_a + ["B"] * n_b})
    return KG(SCHEMA, nodes, pl.DataFrame({"u": u, "v": v, "type": "A-B", "count": 1, "year": y}))


def _flat_gnn(block: Block) -> np.ndarray:
    """No GNN: the test is about the objective, not a model's score (every candidate level)."""
    return np.zeros(block.valid.shape)


def _inputs_for(graph: KG) -> pools.Inputs:
    space = CandidateSpace(graph, AB)
    return pools.Inputs(space, stack.Features(graph, AB, None, None, space.dst), _flat_gnn)


def _window_ranker(kg: KG) -> tuple[EntityRanker, object]:
    split = temporal_split(kg.until(CUTOFF), AB, neg_ratio=5, seed=0)
    rows = pools.window(split, _inputs_for, seed=0).whole()
    return EntityRanker(rows.names, seed=0).fit(rows.x, rows.y, rows.group), split


def test_the_per_entity_ranker_beats_the_whole_space_stack_where_popularity_wins_the_space():
    kg = popular_vs_neighbours()
    ranker, split = _window_ranker(kg)
    fitted = stack.fit(split, None, ["without_gnn"], seed=0)  # the same features, fit across the whole space
    known = kg.until(CUTOFF)
    space = CandidateSpace(known, AB)
    future = future_edges(kg, known, AB, CUTOFF)
    within = future.year <= CUTOFF + 3
    here = _inputs_for(known)
    knn = list(here.feats.names).index("knn_src")
    scorers = {"ltr": pools.RankerBlocks(ranker, here), "stack": fitted.scorer("without_gnn", space),
               "popularity": lambda b: np.broadcast_to(known.degree[space.dst].astype(float), b.valid.shape),
               "knn_src": lambda b: here.feats.planes(b.src)[knn]}
    # the whole space: most answers are bursts' edges (a source gaining ten or more in a year), popularity's
    per_year = pl.DataFrame({"src": future.src[within], "year": future.year[within]}).group_by("src", "year").len()
    assert per_year.filter(pl.col("len") >= 10)["len"].sum() > 0.6 * within.sum()
    # per entity: the stack, fit on the whole space's transitions, ranks the hubs first; the ranker does not
    found = entity_retro.found_at(space, scorers, future.src[within], future.dst[within], (10,), 0, 1 << 16)
    hits = {k: float((h[:, 0] > 0).mean()) for k, h in found.hits.items()}
    diff = (found.hits["ltr"][:, 0] > 0).astype(float) - (found.hits["stack"][:, 0] > 0)
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    assert diff.mean() > 4 * se and hits["ltr"] > hits["stack"] + 0.08, hits
    assert abs(hits["stack"] - hits["popularity"]) < 0.1  # the stack's list is near popularity's


def test_a_planted_post_cutoff_edge_leaves_the_fit_unchanged():
    kg = popular_vs_neighbours(n_a=200, n_b=400, k=10)
    before, _ = _window_ranker(kg)
    # after the cutoff: a source's new edges, a new source, and a destination first linked then
    n_a, n_b = 200, 400
    nodes = kg.nodes.select("name", "type").vstack(pl.DataFrame({"name": ["A-new", "B-new"], "type": ["A", "B"]}))
    a_new, b_new = n_a + n_b, n_a + n_b + 1
    planted = pl.DataFrame({"u": [0, 1, 2, a_new, 3], "v": [n_a + 5, n_a + 6, b_new, n_a + 7, b_new], "type": "A-B",
                            "count": 1, "year": [2016, 2017, 2018, 2016, 2019]})
    later = KG(SCHEMA, nodes, pl.concat([kg.edges.select(planted.columns), planted], how="vertical_relaxed"))
    assert later.num_edges == kg.num_edges + 5
    after, _ = _window_ranker(later)
    assert before.booster.model_to_string() == after.booster.model_to_string()


def test_pools_hold_each_base_rankings_top_and_the_documented_columns():
    kg = popular_vs_neighbours(n_a=120, n_b=300, k=6)
    known = kg.until(CUTOFF)
    inputs = _inputs_for(known)
    space = inputs.space
    block = space.block(space.src[:5])
    i, j, x, _ = pools.block_rows(inputs, block)
    names = pools.columns(inputs.feats, text=False)
    assert x.shape == (len(i), len(names)) and names[: len(inputs.feats.names)] == list(inputs.feats.names)
    planes = inputs.feats.planes(block.src)
    for r, name in enumerate(pools.ranked(inputs.feats)[1:]):  # each plane's top POOL_K of a row is pooled
        s = planes[list(inputs.feats.names).index(name)] if name != "compatible_popularity" else None
        if s is None:
            continue
        for row in range(len(block.src)):
            valid = np.flatnonzero(block.valid[row])
            order = valid[np.argsort(-s[row, valid], kind="stable")][: pools.POOL_K]
            assert set(order.tolist()) <= set(j[i == row].tolist())
    assert set(zip(i.tolist(), j.tolist())) <= set(zip(*np.nonzero(block.valid)))
    votes = x[:, names.index("votes")]
    assert votes.min() >= 1 and votes.max() <= len(pools.ranked(inputs.feats))
    assert (x[:, names.index("known_source")] == 1).all()  # the space's sources are known


def test_a_fitted_ranker_reads_back_as_data_and_predicts_the_same(tmp_path):
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(60), 20)
    x = rng.normal(size=(len(groups), 3)).astype(np.float32)
    y = (x[:, 0] + 0.3 * rng.normal(size=len(groups)) > 1.2).astype(int)
    ranker = EntityRanker(["a", "b", "c"], seed=1).fit(x, y, groups)
    ranker.to_files(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ranker.json", "ranker.txt"]
    back = EntityRanker.from_files(tmp_path)
    np.testing.assert_array_equal(back.predict(x), ranker.predict(x))
    assert ranker.importance()["a"] > 0.5  # the column that decides the labels carries the gain
    with pytest.raises(ValueError, match="contiguous"):
        group_sizes(np.array([0, 0, 1, 0]))


def test_the_pre_cutoff_check_chooses_each_populations_list_on_validation_rows_only():
    """The check fits each variant on the validation part's answers and ranks the test part's entities (both
    before the cutoff): its figures are those of the validation fit, not of the whole window's fit (in-sample
    there); the page's list per population is the best there, and its sentence says so with the figures."""
    from hygrail.discovery import entities

    kg = popular_vs_neighbours()
    split = temporal_split(kg.until(CUTOFF), AB, neg_ratio=5, seed=0)
    heads = stack.validation_heads(split, None, None, None, 0, variant="without_gnn")
    baselines = {"popularity": lambda inputs: (lambda b: np.broadcast_to(
                     inputs.space.kg.degree[inputs.space.dst].astype(float), b.valid.shape)),
                 "stack_without_gnn": lambda inputs: stack.StackBlocks(heads, "without_gnn", inputs.feats, None,
                                                                       None, inputs.space.kg.known)}
    fitted = pools.fit(split, _inputs_for, ["ltr_no_text"], baselines, seed=0)
    figures, choice = fitted.check, fitted.choice
    w = pools.window(split, _inputs_for, 0, baselines=baselines)
    val, whole = w.validation(), w.whole()
    assert 0 < len(np.unique(val.group)) < len(np.unique(whole.group))
    by_val = EntityRanker(val.names, 0).fit(val.x, val.y, val.group)
    in_sample = EntityRanker(whole.names, 0).fit(whole.x, whole.y, whole.group)
    assert pools.check(w, {"ltr_no_text": by_val})[0] == figures
    assert pools.check(w, {"ltr_no_text": in_sample})[0]["known_ltr_no_text_hits_at_10"] != \
        figures["known_ltr_no_text_hits_at_10"]
    assert figures["known_entities"] == len(w.n_test) > 50
    assert choice["known"] == max(("popularity", "stack_without_gnn", "ltr_no_text"),
                                  key=lambda k: (figures[f"known_{k}_hits_at_10"], figures[f"known_{k}_ndcg_at_10"]))
    labels = {"popularity": "Popularity", "stack_without_gnn": "Stack", "ltr_no_text": "Per-entity ranker"}
    note = pools.choice_note(figures, "known", choice["known"], labels)
    assert note.startswith(f"Why this list ({labels[choice['known']]}): on {len(w.n_test):,} entities known")
    assert f"{100 * figures['known_' + choice['known'] + '_hits_at_10']:.0f}%" in note
    # the whole window fits the page's ranker
    np.testing.assert_array_equal(fitted.rankers["ltr_no_text"].predict(whole.x), in_sample.predict(whole.x))
    # each named entity reads its population's list
    space = CandidateSpace(kg.until(CUTOFF), AB)
    known_one = entities.Entity(int(space.src[0]), "A0", "A")
    per_pop = {"known": ("K", None, "why known"), "cold": ("C", None, "why cold")}
    assert entities.list_for(per_pop, space, known_one)[0] == "K"
    assert entities.list_for(("X", None), space, known_one) == ("X", None)
