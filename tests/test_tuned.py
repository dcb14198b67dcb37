"""Issue #46, the tuned reviewer (hygrail/review/tuned.py): which rows it learns from (never a pair
after the cutoff, never a validation or test pair in task=run), its cache key, resuming a killed
training, and the review stage reading it like an LLM. A tiny BERT stands in for MiniLM."""

import numpy as np
import polars as pl
import pytest

from hygrail.data.split import held_out_rows, temporal_split
from hygrail.data.split import balanced
from hygrail.evidence.mode import Hypothesis, load_mode
from hygrail.kg import KG, DataError
from hygrail.review import tuned
from hygrail.review.stage import Reviewer, choose_gamma, decide

from conftest import relation_templates


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    """A one-layer BERT with a word-level vocabulary: a model folder as the base."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-bert")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "material", "can", "be", "effectively", "used",
             "for", "."] + [f"c{i}" for i in range(40)] + [f"a{i}" for i in range(20)]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(str(folder))
    import torch

    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=64)).save_pretrained(str(folder))
    return folder


def _kg(schema, n_chm=40, n_apl=20, seed=0, late=()):
    """CHM-APL edges over 2000-2015; a CHM c links to applications near c mod n_apl (learnable from names);
    ``late``: more (u, v, year) edges."""
    rng = np.random.default_rng(seed)
    names = [f"c{i}" for i in range(n_chm)] + [f"a{i}" for i in range(n_apl)]
    u, v, y = [a for a, _, _ in late], [b for _, b, _ in late], [t for *_, t in late]
    for c in range(n_chm):
        for a in {c % n_apl, (c + 1) % n_apl, (c + 2) % n_apl}:
            u.append(c), v.append(n_chm + a), y.append(int(2000 + rng.integers(0, 16)))
    edges = pl.DataFrame({"u": u, "v": v, "type": "CHM-APL", "count": 1, "year": y})
    return KG(schema, pl.DataFrame({"name": names, "type": ["CHM"] * n_chm + ["APL"] * n_apl}), edges)


def _settings(base, **more):
    return tuned.settings_of({"base": str(base), "max_rows": 120, "neg_per_pos": 3, "batch": 8, "lr": 1e-3,
                              "save_every_s": 0} | more)


def _rows(n=40, seed=0):
    rng = np.random.default_rng(seed)
    first = [f"The material c{i} can be effectively used for a{j}." for i, j in rng.integers(0, 20, (n, 2))]
    return tuned.Rows(first, [None] * n, (rng.random(n) < 0.3).astype(np.int8), "test rows")


def test_no_row_after_the_cutoff_and_none_of_validation_or_test(matkg_schema):
    # a planted link after the cutoff: the split of the graph known at 2015 never holds it
    kg = _kg(matkg_schema, late=[(0, 50, 2018)])
    rel = matkg_schema.relation("chm_apl")
    assert kg.has_edges(np.array([0]), np.array([50]))[0]
    split = temporal_split(kg.until(2015), rel, neg_ratio=5, seed=1)
    mode = load_mode({"mode": "none", "strategy": "hygrail.evidence.naturalize.NoEvidence"},
                     relation_templates("chm_apl"))
    for history in (tuned.held_out(split, 0), tuned.training_part(split)):
        # the later link is no positive (as a sampled non-link of 2015 it may be a negative: it was one then)
        positives = {(int(s), int(d)) for h in history for s, d, y in zip(h.src, h.dst, h.label) if y}
        assert positives and (0, 50) not in positives
        rows = tuned.sample_rows(history, mode, rel, tuned.settings_of({"max_rows": 10_000, "neg_per_pos": 20}))
        assert not any("c0 can be effectively used for a10" in t for t, y in zip(rows.first, rows.label) if y)
    # task=run's rows are the training part: no validation or test pair, every training positive
    train = {(int(s), int(d)) for h in tuned.training_part(split) for s, d in zip(h.src, h.dst)}
    for part in ("val", "test"):
        held = split.part(part)
        assert not train & set(zip(held["src"].to_list(), held["dst"].to_list()))
    assert sum(h.label.sum() for h in tuned.training_part(split)) == split.part("train")["label"].sum()
    # discovery's rows are the stack's fit rows, each read from its feature graph (the training graph at its date)
    held = tuned.held_out(split, 0)
    assert all(h.graph.as_of is not None and not h.statement_only for h in held)
    fit = balanced(held_out_rows(split)[0], 0)
    assert sorted((int(s), int(d), int(y)) for h in held for s, d, y in zip(h.src, h.dst, h.label)) == \
        sorted(zip(fit["src"].to_list(), fit["dst"].to_list(), fit["label"].to_list()))
    # a tuned reviewer in task=run reads the statement only: its positives are edges of the graph
    template = load_mode({"mode": "template", "strategy": "hygrail.evidence.naturalize.Template"},
                         relation_templates("chm_apl"))
    with pytest.raises(DataError, match="evidence=none"):
        tuned.sample_rows(tuned.training_part(split), template, rel, tuned.settings_of({}))


def test_cache_key_changes_with_rows_settings_and_base(tiny_base, tmp_path):
    import shutil

    rows, settings = _rows(), _settings(tiny_base)
    key = tuned.model_key(rows, settings)
    assert tuned.model_key(_rows(), _settings(tiny_base)) == key
    assert tuned.model_key(_rows(seed=1), settings) != key
    flipped = tuned.Rows(rows.first, rows.second, 1 - rows.label, rows.what)
    assert tuned.model_key(flipped, settings) != key
    assert tuned.model_key(rows, _settings(tiny_base, lr=2e-3)) != key
    other = tmp_path / "other-base"
    shutil.copytree(tiny_base, other)
    assert tuned.model_key(rows, _settings(other)) == key  # the same weights in another folder: the same model
    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(str(other / "model.safetensors"))
    name = next(iter(weights))
    weights[name] = weights[name] + 1e-3
    save_file({k: v.contiguous() for k, v in weights.items()}, str(other / "model.safetensors"))
    assert tuned.model_key(rows, _settings(other)) != key
    assert torch.get_num_threads() >= 1


class Kill(Exception):
    pass


def _killed(rows, settings, cache):
    """A training of ``rows`` under ``cache`` killed after its 5th step (the state saved at each)."""
    def kill(step):
        if step == 5:
            raise Kill

    with pytest.raises(Kill):
        tuned.train(rows, settings, cache, progress=False, on_step=kill)


def _same_weights(a, b) -> None:
    for (n, x), (_, y) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert torch_equal(x, y), n


def test_a_killed_training_resumes_to_the_same_weights(tiny_base, tmp_path):
    rows, settings = _rows(60), _settings(tiny_base, epochs=2)
    whole = tuned.train(rows, settings, None, progress=False)
    cache = tmp_path / "tuned"
    _killed(rows, settings, cache)
    key = tuned.model_key(rows, settings)
    assert (cache / f".resume-{key}" / "state.pt").exists() and not (cache / key).exists()
    steps = []
    resumed = tuned.train(rows, settings, cache, progress=False, on_step=steps.append)
    assert steps[0] == 6 and steps[-1] == whole.info["steps"]  # went on after the last save
    _same_weights(whole, resumed)
    assert not (cache / f".resume-{key}").exists()
    again = tuned.train(rows, settings, cache, progress=False)  # from the cache, the same model
    assert again.cache_hit
    np.testing.assert_array_equal(again.logits(rows.first[:5]), resumed.logits(rows.first[:5]))


@pytest.mark.parametrize("name", ["model.safetensors", "meta.json"])
def test_a_truncated_tuned_reviewer_heals_with_one_warning(tiny_base, tmp_path, caplog, name):
    """A truncated weights or meta file of the cached reviewer: one warning line names it, its entry
    is set aside, and the reviewer is trained again to the same weights (then read as a hit)."""
    rows, settings, cache = _rows(), _settings(tiny_base), tmp_path / "tuned"
    first = tuned.train(rows, settings, cache, progress=False)
    (file,) = cache.glob(f"*/{name}")
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        again = tuned.train(rows, settings, cache, progress=False)
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(file) in line and "moved aside" in line and not again.cache_hit
    np.testing.assert_array_equal(again.logits(rows.first[:5]), first.logits(rows.first[:5]))
    assert tuned.train(rows, settings, cache, progress=False).cache_hit


def test_a_truncated_training_state_is_set_aside_and_training_starts_over(tiny_base, tmp_path, caplog):
    """The resume state is read with ``torch.load(weights_only=True)``; one that does not load is
    named in one warning line, set aside, and the training starts from step 0 to the weights
    an unbroken run gives."""
    rows, settings = _rows(60), _settings(tiny_base, epochs=2)
    whole = tuned.train(rows, settings, None, progress=False)
    cache = tmp_path / "tuned"
    _killed(rows, settings, cache)
    (state,) = cache.glob(".resume-*/state.pt")
    state.write_bytes(state.read_bytes()[:1000])
    steps = []
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        again = tuned.train(rows, settings, cache, progress=False, on_step=steps.append)
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(state) in line and "moved aside" in line and steps[0] == 1
    _same_weights(whole, again)


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


def test_the_review_stage_reads_a_tuned_reviewer_like_an_llm(matkg_schema, tiny_base, tmp_path):
    kg = _kg(matkg_schema)
    rel = matkg_schema.relation("chm_apl")
    split = temporal_split(kg, rel, neg_ratio=5, seed=1)
    mode = load_mode({"mode": "none", "strategy": "hygrail.evidence.naturalize.NoEvidence"},
                     relation_templates("chm_apl"))
    llm = {"name": "tuned_tiny", "tuned": {"base": str(tiny_base), "max_rows": 200, "batch": 16, "lr": 1e-3,
                                           "save_every_s": 0}}
    val = split.part("val")
    hyps = [Hypothesis(int(s), int(d), 0.5) for s, d in zip(val["src"], val["dst"])]
    with Reviewer(llm, mode, split.train_graph, rel, tmp_path / "llm", 42, history=tuned.training_part(split)) as r:
        reviewed = r.review(hyps)
        metrics = r.metrics()
    assert (tmp_path / "tuned").is_dir()  # the trained model, cached beside the reply cache
    p = np.array([x.result.confidence for x in reviewed])
    assert ((p > 0) & (p < 1)).all() and all(x.result.ok for x in reviewed)
    assert all(x.result.review == ("yes" if q >= 0.5 else "no") for x, q in zip(reviewed, p))
    assert metrics["llm_requests"] == len(hyps) and metrics["llm_tuned_rows"] > 0
    y = val["label"].to_numpy()
    gamma = choose_gamma(reviewed, y, np.zeros(len(y), int), "fallback", rule="probability")
    assert (decide(reviewed, gamma, np.zeros(len(y), int), "fallback", "probability") == (p >= gamma)).all()


def test_the_reranker_changes_an_order_as_computed_by_hand():
    from hygrail.discovery import rerank

    heads = rerank.Heads(k=4, top=0, seed=0)
    dst = np.array([10, 11, 12, 13, 14, 15])
    heads.best(dst, np.array([0.1, 3.0, 2.0, -1.0, 2.5, 1.0]), src=7)
    kept, score = heads.rows[7]
    assert kept.tolist() == [11, 14, 12, 15] and score.tolist() == [3.0, 2.5, 2.0, 1.0]
    reviewer = {(7, 11): -2.0, (7, 14): 0.0, (7, 12): 1.0, (7, 15): 3.0}
    rev = np.array([reviewer[(7, v)] for v in kept])
    # sum: 1.0, 2.5, 3.0, 4.0 -> 15, 12, 14, 11; reviewer alone: 3, 1, 0, -2 -> the same here
    assert kept[rerank.order(score, rev, "sum")].tolist() == [15, 12, 14, 11]
    assert kept[rerank.order(score, np.zeros(4), "reviewer")].tolist() == kept.tolist()  # ties keep the stack's order
    row = rerank.paired(heads, reviewer, {7: {15, 13}}, "sum", "known", at=2)
    # the stack's first 2 (11, 14) hold no answer; the reviewed first 2 (15, 12) hold 15
    assert row["P@2 stack"] == 0.0 and row["P@2 reviewed"] == 0.5 and row["hits@2 diff"] == 1.0
    with pytest.raises(DataError, match="rerank_rule"):
        rerank.order(score, rev, "mean")


def test_before_validation_reads_only_edges_older_than_validation_and_no_held_out_pair(matkg_schema):
    kg = _kg(matkg_schema)
    rel = matkg_schema.relation("chm_apl")
    split = temporal_split(kg, rel, neg_ratio=5, seed=1)
    val = split.part("val")
    first = int(val.filter(pl.col("label") == 1)["year"].min())
    (h,) = tuned.before_validation(kg, split, 50, seed=0)
    years = {(int(a), int(b)): int(y) for a, b, y in zip(*(kg.relation_edges(rel)[c] for c in ("src", "dst", "year")))}
    pos = [(int(a), int(b)) for a, b, y in zip(h.src, h.dst, h.label) if y]
    assert pos and all(years[p] < first for p in pos)
    held = {(int(a), int(b)) for part in ("val", "test") for a, b in zip(split.part(part)["src"], split.part(part)["dst"])}
    assert not held & {(int(a), int(b)) for a, b in zip(h.src, h.dst)}
    neg = [(int(a), int(b)) for a, b, y in zip(h.src, h.dst, h.label) if not y]
    assert 0 < len(neg) <= 50 and not kg.has_edges(np.array([a for a, _ in neg]), np.array([b for _, b in neg])).any()


@pytest.mark.slow
def test_a_retrospective_reviews_the_stacks_heads_against_its_own_order(tiny_base, tmp_path):
    """task=discover with a cutoff and discover.rerank_k: the page names the reviewer, reviewed_head.csv
    holds the paired rows, every P@10 a share (~1 min on the half-size synthetic MatKG)."""
    from hydra import compose, initialize_config_dir

    from conftest import CONF
    from hygrail.discovery.report import write_report
    from hygrail.discovery.run import discover
    from test_discover import SMALL

    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[*SMALL, "data.scale=0.5", "task=discover", "llm=tuned_minilm",
                                           f"llm.tuned.base={tiny_base}", "llm.tuned.max_rows=300", "evidence=none",
                                           "discover.cutoff=2020", "discover.stack=[with_gnn]", "discover.rerank_k=20",
                                           "discover.review_budget.val=0", "discover.review_budget.candidates=0",
                                           "discover.review_budget.test=0", f"paths.outputs={tmp_path}"])
    result = discover(cfg)
    out = write_report(result)
    table = pl.read_csv(out / "reviewed_head.csv")
    known = table.filter(pl.col("row") == "known")
    assert set(known["rule"]) == {"sum", "reviewer"} and (known["entities"] > 0).all()
    assert ((known["P@10 reviewed"] >= 0) & (known["P@10 reviewed"] <= 1)).all()
    assert result.metrics["rerank_reviews"] > 0 and result.metrics["rerank_train_rows"] > 0
    assert "Reviewed head (issue #46): tuned_minilm, fine-tuned on" in (out / "hypotheses.md").read_text()
