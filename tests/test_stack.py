"""The stacked discovery ranker (issue #35, hygrail/discovery/stack.py): the neighbour features have
their hand-computed values and agree between pair lists and blocks; the GNN's kept logits come back
block by block exactly as a fresh GNN pass gives them; and in a small retrospective run the stack is
ranked over the whole space and per entity, its rows fit on the split's held-out parts only."""

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp

from hygrail.baselines.transitions import Predictor
from hygrail.discovery import entities, entity_page, entity_retro, stack
from hygrail.discovery.space import CandidateSpace, ranking
from hygrail.kg import KG, DataError, Relation, Schema

AB = Relation("ab", "A", "B")
SCHEMA = Schema(("A", "B"), {"ab": AB})


def _kg(edges: list[tuple[int, int]], n_a: int = 4, n_b: int = 4) -> KG:
    nodes = pl.DataFrame({"name": [f"A{i}" for i in range(n_a)] + [f"B{i}" for i in range(n_b)],
                          "type": ["A"] * n_a + ["B"] * n_b})
    u, v = zip(*edges)
    return KG(SCHEMA, nodes, pl.DataFrame({"u": list(u), "v": [n_a + b for b in v], "type": "A-B",
                                           "count": [1] * len(u), "year": [2000] * len(u)}))


def test_top_k_cosine_by_hand():
    # rows 0..2 over 3 columns; row 0 = (1,1,0), row 1 = (1,0,0), row 2 = (0,1,1)
    p = sp.csr_matrix(np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1]], dtype=float))
    k = stack.top_k_cosine(p, np.arange(3), np.arange(3), k=1).toarray()
    # cos(0,1) = 1/sqrt2, cos(0,2) = 1/2, cos(1,2) = 0: row 0 keeps 1, row 1 keeps 0, row 2 keeps 0; never itself
    assert k[0, 1] == pytest.approx(1 / np.sqrt(2)) and k[0, 2] == 0 and k[0, 0] == 0
    assert k[1, 0] == pytest.approx(1 / np.sqrt(2)) and k[1].sum() == pytest.approx(1 / np.sqrt(2))
    assert k[2, 0] == pytest.approx(0.5) and np.count_nonzero(k[2]) == 1
    k2 = stack.top_k_cosine(p, np.arange(3), np.arange(3), k=2).toarray()
    assert np.count_nonzero(k2[1]) == 1  # a zero similarity is no neighbour


def test_neighbour_features_by_hand_and_blocks_agree_with_pairs():
    # A0 has B0, B1; A1 has B0, B1, B2; A2 has B3; A3 has B0
    kg = _kg([(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (2, 3), (3, 0)])
    n = stack.Neighbours(kg, AB, k=1)
    b = lambda i: 4 + i  # noqa: E731
    # A0's nearest source is A1 (cos 2/sqrt6 = 0.816 beats A3's 1/sqrt2 = 0.707): it votes B2 with weight 1
    f = n.pairs(np.array([0, 0, 2]), np.array([b(2), b(3), b(0)]))
    assert f[0, 0] == pytest.approx(1.0) and f[1, 0] == 0.0
    assert f[2, 0] == 0.0  # A2's set shares nothing: no neighbour
    space = CandidateSpace(kg, AB)
    planes = n.block(space.src, space.dst)
    for i, u in enumerate(space.src):
        got = n.pairs(np.full(len(space.dst), u), space.dst)
        for j in range(len(n.names)):
            np.testing.assert_allclose(planes[j][i], got[:, j], rtol=1e-6)


def test_kept_logits_come_back_block_by_block():
    kg = _kg([(0, 0), (1, 1), (2, 2), (3, 3), (0, 1)], n_a=6, n_b=5)
    space = CandidateSpace(kg, AB)
    fake = lambda block: (block.src[:, None] * 10.0 + space.dst[None, :]).astype(np.float32)  # noqa: E731
    kept = np.concatenate([fake(blk)[blk.valid] for blk in space.blocks(2)])
    reader = stack.Kept(kept)
    for blk in space.blocks(2):
        np.testing.assert_array_equal(reader(blk)[blk.valid], fake(blk)[blk.valid])
    assert reader.at == len(kept)


def test_memo_scores_a_block_once():
    calls = []
    memo = stack.Memo(lambda blk: calls.append(blk) or np.zeros(1))
    a, b = object(), object()
    memo(a), memo(a), memo(b), memo(b)
    assert len(calls) == 2


def test_unknown_variant_is_a_one_line_error():
    with pytest.raises(DataError, match=r"discover.stack=\['trees'\]: expected some of \['with_gnn', 'without_gnn', 'without_names'\]"):
        stack.fit(None, None, ["trees"])


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    import hygrail.discovery.run as run
    from test_discover import _cfg

    tmp = tmp_path_factory.mktemp("stack")
    cfg = _cfg(tmp, "discover.cutoff=2020", "discover.review_budget.val=0", "discover.review_budget.test=0",
               "discover.review_budget.candidates=0", "discover.top_k=30",
               "discover.entity_baselines=[relation_popularity,paths3]", "discover.stack=[with_gnn,without_gnn]",
               "discover.entity_ranker=stack_with_gnn", "discover.entity_k=5")
    from hygrail.data import load_kg
    from hygrail.stages import plain

    known = load_kg(plain(cfg.data), cutoff=2020).until(2020)
    src = known.nodes_of_type(known.schema.relation(cfg.relation.name).src)
    cfg.discover.entities = [int(src[np.argmax(known.degree[src])])]  # the best-known source entity, named by id
    return cfg, run.discover(cfg)


def test_the_stack_ranks_the_whole_space_and_each_entity(small_run):
    cfg, result = small_run
    m = result.metrics
    rows = result.retro.headline_rows()
    labels = set(rows["method"].to_list())
    assert {"Stack (trees + GNN)", "Stack without GNN"} <= labels
    for v in ("with_gnn", "without_gnn"):
        auc = m[f"retro_stack_{v}_auc"]
        assert 0.0 <= auc <= 1.0 and not np.isnan(auc)
        assert f"retro_entity_stack_{v}_hits_at_10" in m and f"retro_entity_stack_{v}_lift_hits_at_10" in m
        assert m[f"stack_{v}_trees"] >= 1
    # the tiny graph's held-out rows: 3 positives with both ends known before them (held_out_rows), 1 of them in
    # validation: too few for the check's fit (2 a class), so no stack_check_* is reported rather than a noise AUC
    assert m["stack_check_rows"] if "stack_check_rows" in m else not any(k.startswith("stack_check_") for k in m)
    assert "Stack (trees + GNN)" in result.entities.note
    # the named entity's list is the stack's (discover.entity_ranker), its page section says so
    (e,) = result.entities.lists
    assert e.ranker == "Stack (trees + GNN)" and {"gnn_score", "gnn_rank"} <= set(e.table.columns)
    md = entity_page.markdown(result.entities)
    assert f"### {e.entity}: its best 5 of {e.candidates:,} candidates (Stack (trees + GNN) ranking" in md
    assert "| Stack (trees + GNN) score | GNN score | GNN rank | GNN region |" in md
    # the error analysis' inputs: each answer's place in every list (1 - its mean is the AUC up to the
    # answers' order among themselves), each entity's hits@10 (its mean is the table's)
    answers = result.retro.answers.drop_nulls("place GNN")
    p, n = answers.height, m["discover_candidates"]
    for v, label in list(stack.VARIANTS.items())[:2]:  # the two the small run ranks
        assert abs(1 - answers[f"place {label}"].mean() - m[f"retro_stack_{v}_auc"]) <= p / n
    assert (answers["right_relation_degree"] >= 0).all() and answers["left"].dtype == pl.String
    each = result.entities.each.filter(pl.col("entities known") == entity_retro.KNOWN_ROW)
    assert each.height == m["retro_entity_sources"] and each["answers"].sum() == m["retro_entity_answers"]
    for v, label in list(stack.VARIANTS.items())[:2]:  # the two the small run ranks
        assert each[f"hits@10 {label}"].mean() == pytest.approx(m[f"retro_entity_stack_{v}_hits_at_10"])


@pytest.fixture(scope="module")
def parts(small_run):
    """The small run's cut graph, split, candidate space, GNN, whole-space logits and fitted stack."""
    from hygrail.data import load_kg
    from hygrail.discovery.scoring import GNNBlocks, walk
    from hygrail.stages import build_split, gnn_stage, plain
    from hygrail.triage.train import load_scorer
    from pathlib import Path

    cfg, _ = small_run
    known = load_kg(plain(cfg.data), cutoff=2020).until(2020)
    _, split = build_split(cfg, known)
    triage, _, _ = gnn_stage(cfg, known, split)
    space = CandidateSpace(known, split.relation)
    gnn = GNNBlocks(load_scorer(split, plain(cfg.backbone), int(cfg.seed), Path(cfg.paths.cache) / "triage",
                                graph=known), space)
    logits = walk(space, gnn, 1, 0, int(cfg.discover.block_pairs), keep=True, keep_dtype=np.float32).scores
    fitted = stack.fit(split, triage.scores, ["with_gnn"], None, gnn, int(cfg.seed),
                       stack.names_for(split.train_graph, split.relation, cfg.backbone))
    return cfg, known, space, gnn, logits, fitted, split, triage


def test_the_entity_ranker_alone_fits_the_stack_but_adds_no_ranking(small_run):
    """``discover.entity_ranker=stack_without_gnn`` with ``discover.stack=[]``: the lists are the
    stack's, the retrospective tables rank only what ``discover.stack`` names (none)."""
    import hygrail.discovery.run as run

    cfg, _ = small_run
    cfg = cfg.copy()
    cfg.discover.stack, cfg.discover.entity_ranker = [], "stack_without_gnn"
    result = run.discover(cfg)
    (e,) = result.entities.lists
    assert e.ranker == "Stack without GNN" and "stack_without_gnn_trees" in result.metrics
    assert not any(m.startswith("Stack") for m in result.retro.headline_rows()["method"].to_list())
    assert not any(k.startswith("retro_stack_") or k.startswith("retro_entity_stack_") for k in result.metrics)


def test_the_stack_reads_the_gnn_it_is_given(parts):
    """The whole-space stack (the GNN's kept logits, ``Kept``) scores each block exactly as the same
    stack over a fresh GNN pass (``Memo``): the kept scores are aligned with the walk."""
    from hygrail.discovery.scoring import walk

    cfg, known, space, gnn, logits, fitted, *_ = parts
    block = int(cfg.discover.block_pairs)
    kept = walk(space, fitted.scorer("with_gnn", space, stack.Kept(logits)), 1, 0, block, keep=True).scores
    fresh = walk(space, fitted.scorer("with_gnn", space, stack.Memo(gnn)), 1, 0, block, keep=True).scores
    np.testing.assert_array_equal(kept, fresh)
    assert len(np.unique(kept)) > 5  # a ranking, not a constant (the tiny graph's known head learns from 3 positives)
    # the per-entity rows read the same logits back for any block of sources (here every other one)
    src_all, _ = space.pairs(block)
    rows = stack.Rows(logits, space.src, src_all, lambda b: pytest.fail("no cold-start source in this block"))
    some = space.block(space.src[::2])
    np.testing.assert_allclose(rows(some)[some.valid], gnn(some)[some.valid], rtol=1e-5, atol=1e-6)
    assert rows(some).shape == some.valid.shape and (rows(some)[~some.valid] == 0).all()
    outside = np.setdiff1d(np.arange(known.num_nodes), space.src)
    cold = space.block(np.concatenate([space.src[:1], outside[:1]]))
    assert stack.Rows(logits, space.src, src_all, lambda b: "fallback")(cold) == "fallback"


def test_a_named_entity_is_ranked_by_the_stack_as_the_whole_space_is(parts):
    """``discover.entity_ranker=stack_with_gnn``: an entity of either end of the relation gets its
    candidates in the stack's order, the same scores as the stack's whole-space blocks, with the
    GNN's score, rank and band region beside (the region reads the GNN's score, not the stack's)."""
    from hygrail.discovery.scoring import REGION_NAMES
    from hygrail.triage.routing import Band, route

    cfg, known, space, gnn, logits, fitted, *_ = parts
    band = Band(0.3, 0.7, True, True)
    pair = fitted.pair_scorer("with_gnn", space)
    by_pairs = fitted.pair_scorer("with_gnn", space, max_sources=0)  # every list pair by pair
    whole = fitted.scorer("with_gnn", space, stack.Memo(gnn))
    src_node, dst_node = space.src[np.argmax(known.degree[space.src])], space.dst[np.argmax(known.degree[space.dst])]
    for node in (src_node, dst_node):
        e = entities.Entity(int(node), known.label(int(node)), known.type_of(int(node)), (), space.relation.name)
        lst = entities.rank_entity(space, gnn, band, e, 10, 0, ranker=("Stack (trees + GNN)", pair))
        t = lst.table
        src, dst = entities.entity_pairs(space, e)
        by = pair(src, dst)
        partner = np.where(src == node, dst, src)
        assert lst.ranker == "Stack (trees + GNN)" and t.height == 10 and lst.candidates == len(src)
        assert t["id"].to_list() == partner[ranking(by, src, dst, 0)[:10]].tolist()
        assert t["score"].to_numpy() == pytest.approx(1 / (1 + np.exp(-np.sort(by)[::-1][:10])))
        g = gnn.pairs(src, dst)
        rank_of = {int(p): 1 + int((g > g[i]).sum()) for i, p in enumerate(partner)}
        for row in t.iter_rows(named=True):  # the GNN's rank beside: ties aside, one plus how many it scores higher
            assert rank_of[row["id"]] <= row["gnn_rank"] <= rank_of[row["id"]] + int((g == g[partner == row["id"]][0]).sum()) - 1
        assert t["gnn_score"].to_list() == pytest.approx(gnn.probability(g[[np.flatnonzero(partner == i)[0] for i in t["id"]]]).tolist())
        assert t["region"].to_list() == [REGION_NAMES[int(r)] for r in route(t["gnn_score"].to_numpy(), band)]
        # the row path (a source's list) and the pair path give the same scores
        np.testing.assert_allclose(by_pairs(src, dst), by, rtol=1e-5, atol=1e-5)
        if node == src_node:  # a source's row: the whole-space blocks' own
            blk = space.block(np.array([node]))
            np.testing.assert_allclose(whole(blk)[blk.valid], by, rtol=1e-6, atol=1e-6)


def test_a_fitted_stack_is_cached_by_what_it_was_fit_on(parts, tmp_path):
    """``fit_cached``: a second query reads the trees back (no refit) and ranks exactly as the first;
    another seed or variant list is another entry."""
    cfg, known, space, gnn, logits, fitted, split, triage = parts
    first, hit1 = stack.fit_cached(tmp_path, split, triage.scores, ["with_gnn"], None, gnn, int(cfg.seed))
    again, hit2 = stack.fit_cached(tmp_path, split, triage.scores, ["with_gnn"], None, gnn, int(cfg.seed))
    assert (hit1, hit2) == (False, True) and again.check == first.check == fitted.check
    src, dst = entities.entity_pairs(space, entities.Entity(int(space.src[0]), "", known.type_of(int(space.src[0]))))
    np.testing.assert_array_equal(again.pair_scorer("with_gnn", space)(src, dst), first.pair_scorer("with_gnn", space)(src, dst))
    # the trees came back from arrays and JSON (hygrail/treeio.py), not a pickle, and predict to the bit
    entry = next(p for p in tmp_path.iterdir() if p.is_dir())
    assert sorted(p.name for p in entry.iterdir()) == ["manifest.json", "stack.json", "with_gnn.known.json",
                                                       "with_gnn.known.npz"]
    x = np.hstack([first.features(space).pairs(src, dst), stack.gnn_prob(gnn.probability(gnn.pairs(src, dst)))[:, None]])
    for pop, model in first.models["with_gnn"].items():
        read = again.models["with_gnn"][pop]
        assert read is not model and read.n_iter_ == model.n_iter_
        np.testing.assert_array_equal(read.decision_function(x), model.decision_function(x))
        np.testing.assert_array_equal(Predictor(read, x.shape[1])(x), Predictor(model, x.shape[1])(x))
    _, other = stack.fit_cached(tmp_path, split, triage.scores, ["with_gnn"], None, gnn, int(cfg.seed) + 1)
    assert not other and len(list(tmp_path.iterdir())) == 2 + 2  # two entries and their lock files


@pytest.mark.parametrize("name", ["with_gnn.known.npz", "stack.json"])
def test_a_damaged_stack_entry_is_named_moved_aside_and_fit_again(parts, tmp_path, caplog, name):
    """A truncated trees file or settings file: one warning names it, the entry is kept beside as
    ``<key>.damaged-*`` and the refit trees rank exactly as the clean ones."""
    cfg, known, space, gnn, logits, fitted, split, triage = parts
    first, _ = stack.fit_cached(tmp_path, split, triage.scores, ["with_gnn"], None, gnn, int(cfg.seed))
    (file,) = tmp_path.glob(f"*/{name}")
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        again, hit = stack.fit_cached(tmp_path, split, triage.scores, ["with_gnn"], None, gnn, int(cfg.seed))
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(file) in line and "moved aside" in line and not hit
    assert len(list(tmp_path.glob(f"{file.parent.name}.damaged-*"))) == 1
    src, dst = entities.entity_pairs(space, entities.Entity(int(space.src[0]), "", known.type_of(int(space.src[0]))))
    np.testing.assert_array_equal(again.pair_scorer("with_gnn", space)(src, dst), first.pair_scorer("with_gnn", space)(src, dst))
    assert stack.fit_cached(tmp_path, split, triage.scores, ["with_gnn"], None, gnn, int(cfg.seed))[1]


def test_error_analysis_reads_a_cell(small_run, tmp_path):
    """bench/error_analysis.py on a written cell: the best baseline and where the difference lies."""
    import subprocess
    import sys
    from dataclasses import replace
    from pathlib import Path

    from hygrail.discovery.report import write_report

    _, result = small_run
    folder = write_report(replace(result, out=tmp_path / "cell"))
    script = Path(__file__).resolve().parents[1] / "bench" / "error_analysis.py"
    done = subprocess.run([sys.executable, str(script), str(folder)], capture_output=True, text=True, check=True)
    answers = result.retro.answers.drop_nulls("place GNN")
    ours = 1 - answers["place Stack (trees + GNN)"].mean()
    assert f"whole space: {answers.height:,} answers; ours = Stack (trees + GNN): 1 - mean place {ours:.4f}" in done.stdout
    assert "share of the difference" in done.stdout and "per entity (known at the cutoff)" in done.stdout
    bad = subprocess.run([sys.executable, str(script), str(folder), "--ours", "Oracle"], capture_output=True, text=True)
    assert bad.returncode != 0 and "no column 'place Oracle'" in bad.stderr


def test_a_first_answer_comes_before_the_gnn_and_the_page_is_rewritten_after(tmp_path, monkeypatch, capsys):
    """``discover.first_answer`` (issue #48): with no model cached the page is written first with the
    stack without the GNN's lists, before the GNN trains; then rewritten with the entity_ranker's; a
    second run (model cached) writes no first answer."""
    import hygrail.discovery.run as run
    from hygrail.discovery.report import write_report
    from test_discover import _cfg

    cfg = _cfg(tmp_path, "discover.entities_only=true", "discover.first_answer=true",
               "discover.entity_ranker=stack_with_gnn", "discover.entity_k=5", "discover.review_budget.val=0",
               "discover.review_budget.test=0", "discover.review_budget.candidates=0")
    from hygrail.data import load_kg
    from hygrail.stages import plain

    kg = load_kg(plain(cfg.data))
    src = kg.nodes_of_type(kg.schema.relation(cfg.relation.name).src)
    cfg.discover.entities = [int(src[np.argmax(kg.degree[src])])]
    seen = []
    train = run.gnn_stage

    def gnn_stage(*a, **k):  # what the page says while the GNN would train
        seen.append((run.default_out(cfg) / "hypotheses.md").read_text())
        return train(*a, **k)

    monkeypatch.setattr(run, "gnn_stage", gnn_stage)
    result = run.discover(cfg)
    first, = seen
    assert "First answer, ranked by Stack without GNN (discover.first_answer)" in first
    assert "| GNN rank |" not in first and "| score (Stack without GNN) |" in first
    printed = capsys.readouterr().out
    assert "first answer (the stack without the GNN" in printed and "\n  1. " in printed  # its first five, printed
    assert result.entities.lists[0].ranker == "Stack (trees + GNN)" and "first_answer_seconds" not in result.metrics
    final = (write_report(result) / "hypotheses.md").read_text()
    assert "First answer" not in final and "| score (Stack (trees + GNN)) |" in final
    seen.clear()
    run.discover(cfg)
    assert len(seen) == 1 and "First answer" not in seen[0]  # cached: the page read is the last full one
