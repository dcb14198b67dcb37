"""Discovery (task=discover): block scoring equals per-pair scoring, the streamed top-K equals brute
force over every pair, no observed edge is proposed, nothing dated after a cutoff reaches any stage,
the ranking metrics by hand, bad options stop with one line; and one discovery end to end against
the scripted reviewer (report files, MLflow run)."""

import json
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
import torch
from hydra import compose, initialize_config_dir

from conftest import CONF, ROOT
from hygrail.data import data_config, load_kg
from hygrail.data.csv import save_csv
from hygrail.data.split import temporal_split
from hygrail.discovery import retro
from hygrail.discovery.run import discover, main
from hygrail.discovery.scoring import GNNBlocks, PreferentialAttachment, link_by_source, two_stage, walk
from hygrail.discovery.space import CandidateSpace, TopK, ranking
from hygrail.kg import KG, DataError, Relation, Schema
from hygrail.triage import train
from hygrail.triage.features import BlockPairFeatures, LinkBlocks, link_features, pair_features
from hygrail.triage.routing import Band, route
from scripted_server import Reply, ScriptedServer, ok_review
from test_triage import FAST, planted_kg


@pytest.fixture(scope="module")
def planted():
    kg = planted_kg(sizes=(60, 40, 50))
    return temporal_split(kg, kg.schema.relations["chm_apl"], neg_ratio=5)


@pytest.fixture(scope="module", params=["rgcn", "hgt", "rgcn_plus", "rgcn_plus_head"])
def scorer(request, planted):
    """rgcn_plus_head: with its fitted validation head, whose block inputs include TSH's descriptors."""
    cfg = FAST["rgcn_plus"] | {"head_folds": 3} if request.param == "rgcn_plus_head" else FAST[request.param]
    run = train.fit(planted, cfg | {"epochs": 2, "val_every": 1}, seed=3)
    return train.Scorer(run.module, planted.train_graph)


@pytest.mark.parametrize("blocks, per_pair", [(BlockPairFeatures, pair_features), (LinkBlocks, link_features)])
def test_block_pair_features_equal_per_pair(planted, blocks, per_pair):
    g = planted.train_graph
    src, dst = g.nodes_of_type("CHM"), g.nodes_of_type("APL")
    block = blocks(g, dst)(src)
    ref = per_pair(g, np.repeat(src, len(dst)), np.tile(dst, len(src))).reshape(len(src), len(dst), -1)
    assert g.has_edges(np.repeat(src, len(dst)), np.tile(dst, len(src))).any()  # own-edge correction exercised
    np.testing.assert_allclose(block, ref, rtol=1e-6, atol=1e-7)


def test_block_scores_equal_per_pair_scores(scorer):
    g = scorer.kg
    src, dst = g.nodes_of_type("CHM")[:13], g.nodes_of_type("APL")
    logits = scorer.logit_block(src, dst, chunk=97)
    per_pair = scorer(np.repeat(src, len(dst)), np.tile(dst, len(src)))
    np.testing.assert_allclose(scorer.probability(logits).ravel(), per_pair, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("block_pairs", [1, 50, 1 << 18])
def test_link_features_by_source_blocks_equal_per_pair(planted, block_pairs):
    g = planted.train_graph
    rng = np.random.default_rng(block_pairs)
    src, dst = rng.choice(g.nodes_of_type("CHM"), 400), rng.choice(g.nodes_of_type("APL"), 400)
    np.testing.assert_array_equal(link_by_source(g, src, dst, block_pairs), link_features(g, src, dst))


def test_pair_lists_equal_per_pair_scores(scorer):
    """Two stages and per-entity queries score pair lists by ``GNNBlocks.pairs`` (link features by
    source blocks, the head's TSH columns pair by pair, or carried from stage one's ``cheap``
    block features): the model's own per-pair logits."""
    space = CandidateSpace(scorer.kg, Relation("chm_apl", "CHM", "APL"))
    gnn = GNNBlocks(scorer, space, block_pairs=50)
    rng = np.random.default_rng(5)
    src, dst = rng.choice(space.src, 300), rng.choice(space.dst, 300)
    ref = scorer.logits(src, dst)
    np.testing.assert_allclose(gnn.pairs(src, dst), ref, rtol=1e-5, atol=1e-5)
    if gnn.cheap is not None:
        rows = {s: i for i, s in enumerate(np.unique(src))}
        block = gnn.cheap(np.unique(src))  # stage one's features, read at the pairs as the shortlist keeps them
        carried = block[[rows[s] for s in src], np.searchsorted(space.dst, dst)]
        np.testing.assert_allclose(carried, gnn.cheap_pairs(src, dst), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(gnn.pairs(src, dst, cheap=carried), ref, rtol=1e-5, atol=1e-5)
    assert gnn.head_pairs is not None or getattr(scorer.backbone, "head", None) is None  # rgcn_plus_head: TSH columns


@pytest.mark.parametrize("name", ["hgt", "heteroconv"])
def test_encoding_by_destination_chunks_is_exact(planted, name):
    run = train.fit(planted, FAST[name] | {"epochs": 1, "val_every": 1}, seed=4)
    whole = train.Scorer(run.module, planted.train_graph)
    chunked = train.Scorer(run.module, planted.train_graph, encode_edges=37)  # ~30 runs per layer and type
    for t in whole.z:
        torch.testing.assert_close(chunked.z[t], whole.z[t], rtol=1e-5, atol=1e-6)
    layers = {type(m).__name__ for m in run.module.backbone.modules()}
    assert layers & {"HGTConv", "HeteroConv"} and "DestinationChunks" not in layers  # layers restored


def _brute_force(space: CandidateSpace, score_pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every candidate, listed pair by pair from the node lists (no blocks), with its score."""
    kg = space.kg
    pairs = [(s, d) for s in space.src for d in space.dst
             if (s < d if space.same_type else True) and s != d and not kg.has_edges(np.array([s]), np.array([d]))[0]]
    src, dst = (np.array(x, dtype=np.int64) for x in zip(*pairs))
    return src, dst, score_pairs(src, dst)


def test_streamed_top_k_equals_brute_force(scorer):
    g = scorer.kg
    space = CandidateSpace(g, Relation("chm_apl", "CHM", "APL"))
    gnn = GNNBlocks(scorer, space)
    src, dst, logits = _brute_force(space, scorer.logits)
    assert len(src) == space.size
    band = Band(float(np.quantile(scorer.probability(logits), 0.3)), float(np.quantile(scorer.probability(logits), 0.9)),
                True, True)
    w = walk(space, gnn, 25, seed=1, block_pairs=70, band=band, probability=gnn.probability, routed_k=8, keep=True)
    order = ranking(logits, src, dst, seed=1)
    assert list(zip(w.head.src, w.head.dst)) == list(zip(src[order[:25]], dst[order[:25]]))
    np.testing.assert_allclose(w.head.score, logits[order[:25]], rtol=1e-5, atol=1e-5)
    r = route(scorer.probability(logits), band)
    assert w.counts == {"auto_reject": int((r == 0).sum()), "routed": int((r == -1).sum()), "auto_accept": int((r == 1).sum())}
    routed = order[r[order] == -1][:8]
    assert list(zip(w.routed.src, w.routed.dst)) == list(zip(src[routed], dst[routed]))
    np.testing.assert_allclose(w.scores, logits, rtol=1e-5, atol=1e-5)  # walk order = source-major listing


def test_two_stages_with_the_whole_space_as_shortlist_are_exact(scorer):
    """Stage two rescores the shortlist with the features carried from stage one: with every
    candidate shortlisted, the head is the exhaustive one; region counts are sample estimates."""
    space = CandidateSpace(scorer.kg, Relation("chm_apl", "CHM", "APL"))
    gnn = GNNBlocks(scorer, space)
    band = Band(0.2, 0.6, True, True)
    exact = walk(space, gnn, 30, seed=2, block_pairs=90, band=band, probability=gnn.probability)
    w = two_stage(gnn, space, 30, seed=2, block_pairs=90, shortlist=space.size, band=band, sample=500, partners=4)
    assert list(zip(w.head.src, w.head.dst)) == list(zip(exact.head.src, exact.head.dst))
    np.testing.assert_allclose(w.head.score, exact.head.score, rtol=1e-5, atol=1e-5)
    assert w.estimated and sum(w.counts.values()) == pytest.approx(space.size, abs=3)
    assert w.info["sample"] == 500 and 0 < w.info["surrogate_r2"] <= 1


def test_same_type_space_has_each_unordered_pair_once_and_ties_break_by_hash():
    schema = Schema(("A", "B"), {"aa": Relation("aa", "A", "A")})
    rng = np.random.default_rng(0)
    u, v = rng.integers(0, 30, 80), rng.integers(0, 30, 80)
    keep = u != v
    nodes = pl.DataFrame({"name": [f"n{i}" for i in range(35)], "type": ["A"] * 30 + ["B"] * 5})
    edges = pl.DataFrame({"u": u[keep], "v": v[keep], "type": "A-A", "count": 1, "year": 2000}).unique(["u", "v"])
    kg = KG(schema, nodes, edges.filter(pl.col("u") != pl.col("v")))
    space = CandidateSpace(kg, schema.relations["aa"])
    pa = PreferentialAttachment(kg, space)
    src, dst, score = _brute_force(space, lambda s, d: kg.degree[s].astype(float) * kg.degree[d])
    assert len(src) == space.size == len(space.src) * (len(space.src) - 1) // 2 - kg.num_edges
    assert len(set(zip(src, dst))) == len(src) and (src < dst).all()
    w = walk(space, pa, 40, seed=5, block_pairs=31)
    order = ranking(score, src, dst, seed=5)
    assert len(np.unique(score[order[:60]])) < 40  # many exact ties: the hash decides among them
    assert list(zip(w.head.src, w.head.dst)) == list(zip(src[order[:40]], dst[order[:40]]))
    ps, pd = space.pairs(block_size=17)
    assert list(zip(ps, pd)) == list(zip(src, dst))
    assert ps.dtype == pd.dtype == np.uint16  # the smallest that holds the node ids (5.7e7 pairs of HPO: 0.23 GB)
    assert space.positions(ps, pd, src[::-7], dst[::-7]).tolist() == list(range(len(src)))[::-7]


def test_no_observed_edge_is_ever_proposed(planted):
    g = planted.train_graph
    space = CandidateSpace(g, planted.relation)
    w = walk(space, PreferentialAttachment(g, space), space.size + 10, seed=0, block_pairs=500)
    assert len(w.head.src) == space.size
    assert not g.has_edges(w.head.src, w.head.dst).any()
    assert space.contains(w.head.src, w.head.dst).all()


def test_top_k_keeps_the_k_best_whatever_the_block_order():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 5, (40, 30)).astype(float)  # many ties
    src, dst = np.arange(40), np.arange(100, 130)
    mask = rng.random((40, 30)) < 0.8
    whole = TopK(50, seed=9)
    whole.push(scores, mask, src, dst)
    parts = TopK(50, seed=9)
    for lo in rng.permutation(np.arange(0, 40, 7)):
        parts.push(scores[lo : lo + 7], mask[lo : lo + 7], src[lo : lo + 7], dst)
    assert list(zip(whole.src, whole.dst)) == list(zip(parts.src, parts.dst))


# -- retrospective metrics ---------------------------------------------------------------------------
def test_ranking_metrics_by_hand():
    hits = np.array([1, 0, 1, 0, 0, 0, 0, 0, 0, 1])
    m = retro.ranking_metrics(hits, n_future=4, ks=(2, 10))
    assert m["precision_at_2"] == 0.5 and m["recall_at_2"] == 0.25
    assert m["precision_at_10"] == 0.3 and m["recall_at_10"] == 0.75
    assert m["average_precision"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 10) / 4)  # the 4th is never found


def test_hygrail_order_puts_accepted_first():
    gnn_order = np.array([4, 0, 3, 1, 2, 5])  # GNN ranking of six candidates
    auto = np.array([False, False, False, False, True, False])
    yes = np.array([False, False, True, False, False, True])
    no = np.array([True, False, False, False, False, False])
    conf = np.array([0.0, 0.0, 0.6, 0.0, 0.0, 0.9])
    # above b*; LLM-accepted by confidence; the rest in GNN order; LLM-rejected last
    assert retro.hygrail_order(gnn_order, auto, yes, no, conf).tolist() == [4, 5, 2, 3, 1, 0]


# -- the discovery job ---------------------------------------------------------------------------------
SMALL = ["backbone=rgcn", "backbone.epochs=6", "backbone.val_every=3", "relation=chm_apl",
         "discover.top_k=40", "discover.review_budget.val=4", "discover.review_budget.candidates=5",
         "discover.review_budget.test=3",
         "discover.tsh.embedding=false", "routing.m=0.995", "routing.n=0.9"]


def _cfg(tmp_path, *overrides, url="http://127.0.0.1:9/v1"):
    data = [] if "data=csv" in overrides else ["data.scale=0.5"]
    with initialize_config_dir(str(CONF), version_base="1.3"):
        return compose("config", overrides=[*SMALL, *data, "task=discover", "llm=scripted", f"llm.base_url={url}",
                                            f"paths.outputs={tmp_path}", *overrides])


@pytest.fixture(scope="module")
def planted_future(tmp_path_factory):
    """The half-size synthetic MatKG as CSV, plus edges dated after the 2020 cutoff: a CHM-APL edge
    (u, v) between two nodes known by then, and a CHM-PRO edge (u, p) to a PRO neighbour p of v that
    would give the evidence a path u - p - v if it leaked."""
    kg = load_kg(data_config(scale=0.5))
    known = kg.until(2020)
    deg = known.degree
    rel = kg.schema.relation("chm_apl")
    chm = [n for n in kg.nodes_of_type("CHM") if deg[n] > 2]
    apl = [n for n in kg.nodes_of_type("APL") if deg[n] > 2]
    u = next(c for c in chm if not kg.has_edges(np.array([c] * len(apl)), np.array(apl)).all())
    v = next(a for a in apl if not kg.has_edges(np.array([u]), np.array([a]))[0])
    nbrs, _ = known.neighbors(v)
    p = next(int(n) for n in nbrs if known.type_of(int(n)) == "PRO" and not kg.has_edges(np.array([u]), np.array([n]))[0])
    extra = pl.DataFrame({"u": [u, u], "v": [v, p], "type": [kg.schema.edge_type("CHM", "APL"), kg.schema.edge_type("CHM", "PRO")],
                          "count": [60, 80], "year": [2022, 2021]})
    planted = KG(kg.schema, kg.nodes, pl.concat([kg.edges, extra.cast(kg.edges.schema)]))
    folder = tmp_path_factory.mktemp("planted")
    save_csv(planted, folder)
    return folder, (u, v, p), rel


def test_discovery_with_a_cutoff_end_to_end(tmp_path, planted_future, monkeypatch, capsys):
    """Nothing dated after the cutoff reaches the training graph, the candidate exclusion set or the
    evidence; the report, the table, the ranking and the MLflow run are what they claim."""
    folder, (u, v, p), rel = planted_future
    import hygrail.discovery.run as run
    import hygrail.evidence.naturalize as nat

    seen, results = [], []  # every graph the evidence stage retrieves from; the Discovery itself
    real_retrieve, real_discover = nat.retrieve_many, run.discover
    monkeypatch.setattr(nat, "retrieve_many", lambda graph, *a, **k: seen.append(graph) or real_retrieve(graph, *a, **k))
    monkeypatch.setattr(run, "discover", lambda cfg, **kw: results.append(real_discover(cfg, **kw)) or results[-1])
    with ScriptedServer(default=Reply(ok_review("yes", 0.9, "Shared mechanism."))) as server:
        cfg = _cfg(tmp_path, "data=csv", f"data.path={folder}", "discover.cutoff=2020", url=server.base_url)
        main(cfg)
    res = results[0]
    pair, evidence_edge = (np.array([u]), np.array([v])), (np.array([u]), np.array([p]))
    for graph in [res.graph, res.space.kg, *seen]:
        assert not graph.has_edges(*pair)[0] and not graph.has_edges(*evidence_edge)[0]
        assert graph.edges["year"].max() <= 2020
    # every ranking, list and candidate's evidence reads the cut graph (everything known at the cutoff);
    # the held-out validation/test hypotheses' evidence reads the training graph, where they are no edges
    assert res.graph is res.space.kg and res.space.kg.edges["year"].max() == 2020
    assert sum(g is res.graph for g in seen) == 2  # the candidates' reviews, the cards
    assert [g.num_edges < res.graph.num_edges for g in seen if g is not res.graph] == [True, True]
    assert res.space.contains(*pair)[0], "a post-cutoff edge must stay a candidate, not an excluded observed edge"
    m = res.metrics
    assert m["retro_future_edges"] >= 1
    assert m["discover_auto_reject"] + m["discover_routed"] + m["discover_auto_accept"] == m["discover_candidates"]
    # one call per review; a validation negative is also a candidate, so its reply may come from the cache
    assert m["discover_val_reviewed"] == 4 and m["discover_test_reviewed"] == 3 and m["discover_reviewed"] == 5
    assert server.count == m["llm_calls"] and m["llm_requests"] == 12

    out = tmp_path / "discover" / "chm_apl" / "rgcn-scripted-template-seed42-cutoff2020"
    assert f"report: {out.resolve() / 'index.html'}" in capsys.readouterr().out
    table = pl.read_parquet(out / "hypotheses.parquet")
    assert table.height >= 40 and table["rank"].to_list() == list(range(1, table.height + 1))
    assert not res.space.kg.has_edges(table["left_id"].to_numpy(), table["right_id"].to_numpy()).any()
    reviewed = table.filter(pl.col("review").is_not_null())
    assert reviewed.height == 5 and (reviewed["region"] == "routed").all()
    assert (reviewed["verdict"] == np.where(reviewed["confidence"] >= m["gamma"], "accept", "reject")).all()
    # HyGRAIL's order: above b* (by GNN rank), LLM-accepted, the rest (by GNN rank), LLM-rejected
    group = np.select([table["region"] == "auto_accept", table["review"].is_not_null() & (table["verdict"] == "accept"),
                       table["review"].is_not_null()], [0, 1, 3], 2)
    assert (np.diff(group) >= 0).all()
    for g in (0, 2):
        assert (np.diff(table["gnn_rank"].to_numpy()[group == g]) > 0).all()
    retro_table = pl.read_csv(out / "retrospective.csv").filter(
        (pl.col("horizon") == 3) & (pl.col("min_degree") == 0) & (pl.col("min_count") == 1))  # the headline
    assert retro_table["method"].to_list() == ["GNN", "HyGRAIL", "TSH", "Preferential attachment", "Common neighbours",
                                               "3-paths", "Popularity (all edges)", "Popularity (relation)",
                                               "GNN novelty-aware", "GNN degree-adjusted"]
    assert retro_table["precision_at_10"].is_between(0, 1).all() and retro_table["ap"].is_between(0, 1).all()
    assert pl.read_csv(out / "hypotheses.csv").height == table.height
    card = json.loads(table["structured"][0])
    assert card["left"]["name"] == table["left"][0] and "paths" in card
    page = (out / "index.html").read_text()
    assert page.count("class='card'") == table.height and "data:image/png;base64," in page
    assert "http" not in page.split("</header>")[1].replace("http://127.0.0.1", "")  # nothing fetched
    assert "Shared mechanism." in page and "## Retrospective evaluation" in (out / "hypotheses.md").read_text()

    import mlflow

    mlflow.set_tracking_uri(cfg.tracking.uri)
    runs = mlflow.search_runs(experiment_names=["discover"], output_format="list")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert runs[0].data.tags["task"] == "discover" and runs[0].data.tags["cutoff"] == "2020"
    assert runs[0].data.params["discover.top_k"] == "40" and runs[0].data.metrics["discover_reviewed"] == 5
    assert runs[0].data.metrics["retro_gnn_precision_at_10"] == retro_table["precision_at_10"][0]
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(runs[0].info.run_id)}
    assert {"index.html", "hypotheses.parquet", "hypotheses.csv", "hypotheses.md", "precision_at_k.png"} <= names


@pytest.mark.parametrize("override, option", [
    ("discover.top_k=0", "discover.top_k=0"),
    ("discover.cutoff=1980", "discover.cutoff=1980 is before the first dated edge"),
    ("discover.review_budget.candidates=-1", "discover.review_budget.candidates=-1"),
    ("discover.shortlist=5000", "discover.cutoff=2020 with discover.shortlist=5000"),
    ("discover.threads=0", "discover.threads=0: expected a number of threads >= 1"),
])
def test_bad_options_are_one_line_data_errors(tmp_path, override, option):
    extra = ["discover.cutoff=2020"] if "shortlist" in override else []
    with pytest.raises(DataError, match=option.replace("*", r"\*")):
        discover(_cfg(tmp_path, override, *extra))


def test_training_keeps_the_job_threads_and_scoring_takes_discover_threads(tmp_path, monkeypatch):
    """The model depends on training's thread count, the scores do not (conf/discover/default.yaml):
    training at ``threads`` (1), the walk (torch and sklearn's OpenMP trees) at ``discover.threads``,
    the caller's count restored after. The trained module is freed before the walk (``train.free_training``):
    only the scorer's own module is alive there."""
    import gc

    from threadpoolctl import threadpool_info

    from hygrail.discovery import run
    from hygrail.triage.train import TriageModule

    seen = {}

    def spy(name, real):
        def call(*a, **k):
            openmp = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp"}
            modules = sum(isinstance(o, TriageModule) for o in gc.get_objects())
            seen[name] = (torch.get_num_threads(), openmp, modules)
            return real(*a, **k)
        return call

    gc.collect()
    before = sum(isinstance(o, TriageModule) for o in gc.get_objects())  # other tests' fixtures hold theirs
    monkeypatch.setattr(run, "gnn_stage", spy("training", run.gnn_stage))
    monkeypatch.setattr(run, "walk", spy("scoring", run.walk))
    discover(_cfg(tmp_path, "discover.threads=2", "discover.review_budget.candidates=0", "discover.top_k=5"))
    assert seen == {"training": (1, {1}, before), "scoring": (2, {2}, before + 1)}
    assert torch.get_num_threads() == 1


def test_a_cutoff_on_a_kg_without_years_names_the_option(tmp_path):
    kg = load_kg(data_config(scale=0.3))
    save_csv(KG(kg.schema, kg.nodes, kg.edges.with_columns(pl.lit(-1, pl.Int32).alias("year"))), tmp_path / "kg")
    with pytest.raises(DataError, match=r"discover.cutoff=2010: this KG has no edge years"):
        discover(_cfg(tmp_path, "data=csv", f"data.path={tmp_path / 'kg'}", "discover.cutoff=2010"))


def test_cli_bad_option_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "hygrail.sweep", "task=discover", "discover.top_k=0",
                        f"paths.outputs={tmp_path}"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1].startswith("error: discover.top_k=0: expected a positive number")
    assert "Traceback" not in r.stderr



def test_every_sources_list_is_exact_in_a_walk_and_from_a_whole_row_shortlist(scorer):
    """``lists``: a walk keeps every source's best candidates exactly (brute force: each source's
    candidates sorted by logit); two stages rescore each row's surrogate shortlist with the model,
    so with whole rows shortlisted they give the same lists."""
    space = CandidateSpace(scorer.kg, Relation("chm_apl", "CHM", "APL"))
    gnn = GNNBlocks(scorer, space)
    band = Band(0.2, 0.6, True, True)
    k = 7
    w = walk(space, gnn, 30, seed=2, block_pairs=90, lists=k)
    src, dst = space.pairs()
    logit = scorer.logits(src, dst)
    n = 0
    for s in space.src:
        mine = src == s
        best = dst[mine][ranking(logit[mine], src[mine], dst[mine], 2)][:k]
        assert list(w.lists.dst[w.lists.src == s]) == list(best)
        n += len(best)
    assert len(w.lists.src) == n and np.all(np.diff(w.lists.src) >= 0)
    two = two_stage(gnn, space, 30, seed=2, block_pairs=90, shortlist=50, band=band, sample=500, partners=4,
                    lists=k, lists_shortlist=len(space.dst))
    assert list(zip(two.lists.src, two.lists.dst)) == list(zip(w.lists.src, w.lists.dst))
    np.testing.assert_allclose(two.lists.score, w.lists.score, rtol=1e-5, atol=1e-5)
    assert two.info["lists_rescored"] == space.size


@pytest.mark.parametrize("overrides, message", [
    (["discover.entity_lists=yes"], "discover.entity_lists='yes': expected true or false"),
    (["discover.entity_lists=true", "discover.entity_k=20", "discover.entity_lists_shortlist=5"],
     "discover.entity_lists_shortlist=5: expected a number of candidates per entity >= discover.entity_k=20"),
])
def test_entity_list_options_fail_in_one_line(tmp_path, overrides, message):
    from hygrail.discovery import options

    with pytest.raises(DataError) as e:
        options(_cfg(tmp_path, *overrides))
    assert str(e.value) == message
