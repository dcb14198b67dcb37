"""The per-entity ranker's rows (issue #55): each entity's candidate pool and the pooled candidates'
features, for the fit window (``window``) and at the cutoff (``RankerBlocks``); ``entity_ranker`` fits and
scores them.

Base rankings (``ranked``: each over all of an entity's candidates, none fit on any label): the GNN's
logit, and from the stack's features (``stack.Features``: ``transitions.PairFeatures``, the neighbours'
votes, the names' cosine) the 3-path count, the candidate's popularity in the relation, compatible
popularity (the recipes: element-compatible candidates first, then by popularity), the sources' and the
destinations' neighbours' votes (``knn_src``, ``knn_dst``, ``knn_via``) and the names' cosine. The pool of
an entity is the union of each base ranking's top ``POOL_K``. Not base rankings here: the stack, TSH and
the trees on transitions, each fit on the very transitions the ranker learns from (the stack and TSH on the
split's held-out rows; the trees on the window (t - h, t], the same years), so their scores on the fit rows
would be in-sample and the ranker would learn to trust them more than they deserve; their inputs (the same
features) enter directly, and the tables compare the ranker with each of them.

Features of a pooled candidate (``columns``): every stack feature, the GNN's logit, each base ranking's rank
within the entity (log1p of the 0-based rank), how many base rankings hold it in their top ``POOL_K``,
whether the entity is known at the graph's date (its population: known, or cold, given by its name or
composition), and, with a text model, the tuned cross-encoder's log-odds of its statement for the
candidates in the top ``TEXT_K`` of the GNN or of the names' cosine (NaN elsewhere: LightGBM reads a
missing value as such; scoring every pooled candidate would cost ~20x more at 4-5 ms a pair on one
thread). The statement reads the two names only, so each pair is scored once whatever graph asks.

The fit window (``window``, built in one pass; the check reads the same rows): the split's held-out transitions (``data.split.held_out_rows``: the relation's
newest pre-cutoff edges, dated after the training graph's date D), grouped by source, each group ranked
over all its candidates in the graph at D (the feature graph, cold sources' compositions supplied), the
GNN scoring over that graph (the model trained on the training graph, which never held these edges), and
each group's labels its held-out positives. Held-out positives dated at or before D, or not among the
labels (the other part's, for the check), are true links: neither candidates nor negatives. Every group
with no answer in its pool is left out (lambdarank learns nothing from it), and at most ``MAX_GROUPS``
groups of each population are kept (seeded): bounds the window's GNN scoring, ~3 us a pair on whole HPO.

``POOL_K`` = 30 (a pool of 30 to ~200 per entity: the page's 10 with room for every base ranking to bring
its best), ``TEXT_K`` = 5 (first 10: a 4,000-node recipes sample's 329 new targets took 103 s of text at
load 6), ``MAX_GROUPS`` = 2,000: chosen for cost before any run, not tuned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import polars as pl
from tqdm import tqdm

from hygrail.data.split import held_out_rows
from hygrail.discovery.space import Block, CandidateSpace
from hygrail.kg import KG

POOL_K = 30
TEXT_K = 5
MAX_GROUPS = 2_000
POPULATIONS = ("known", "cold")
OUTSIDE = 1e4  # a pooled candidate's score is the ranker's plus this: every pooled one before every other
# base rankings read from the stack's feature planes (absent ones skipped: knn_via needs compositions, name_cos names)
PLANES_RANKED = ("paths3", "rel_deg_dst", "knn_src", "knn_dst", "knn_via", "name_cos")


@dataclass
class Inputs:
    """What the rows of one graph are read from: its candidate space, the stack's features over it (shared
    with the stack's own scorer, whose last block's planes they reuse), the GNN's block logits over it, and
    optionally the text model's log-odds of listed pairs (``text(src, dst)``)."""

    space: CandidateSpace
    feats: object  # stack.Features
    gnn: Callable[[Block], np.ndarray]
    text: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None


def ranked(feats) -> list[str]:
    """The base rankings of ``feats``' planes (module docstring), with "gnn" first."""
    names = list(feats.names)
    out = ["gnn"] + [n for n in PLANES_RANKED if n in names]
    return out + (["compatible_popularity"] if "compatible_all" in names else [])


def columns(feats, text: bool) -> list[str]:
    """The ranker's columns over ``feats``: its planes, the GNN's logit, the ranks, votes, population, text."""
    return [*feats.names, "gnn", *(f"rank_{r}" for r in ranked(feats)), "votes", "known_source",
            *(["text"] if text else [])]


def _row_ranks(s: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """0-based rank of each candidate in its row (descending score; invalid last; ties by column)."""
    key = np.where(valid, -np.asarray(s, dtype=np.float64), np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(s.shape[1])[None, :], axis=1)
    return rank


def block_rows(inputs: Inputs, block: Block) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, x, gnn logits): the pooled candidates of ``block`` (row i, destination column j, among
    ``block.valid``), their features (``columns`` order) and the block's GNN logits (S x D)."""
    space, feats = inputs.space, inputs.feats
    planes = feats.planes(block.src)  # F x S x D
    logits = np.asarray(inputs.gnn(block), dtype=np.float64)
    by = {"gnn": logits}
    names = list(feats.names)
    for n in PLANES_RANKED:
        if n in names:
            by[n] = planes[names.index(n)]
    if "compatible_all" in names:  # element-compatible candidates first, then by relation popularity
        by["compatible_popularity"] = planes[names.index("compatible_all")] * 1e3 + planes[names.index("rel_deg_dst")]
    valid = block.valid
    ranks = {name: _row_ranks(s, valid) for name, s in by.items()}
    top = np.stack([r < POOL_K for r in ranks.values()])
    pool = top.any(axis=0) & valid
    i, j = np.nonzero(pool)
    parts = [planes[:, i, j].T, logits[i, j][:, None]]
    parts += [np.log1p(ranks[name][i, j])[:, None] for name in ranks]
    parts += [top[:, i, j].sum(axis=0)[:, None], space.kg.known[block.src[i]][:, None]]
    if inputs.text is not None:
        text = np.full(len(i), np.nan)
        head = (ranks["gnn"][i, j] < TEXT_K) | (ranks["name_cos"][i, j] < TEXT_K if "name_cos" in ranks else False)
        if head.any():
            text[head] = inputs.text(block.src[i[head]], space.dst[j[head]])
        parts.append(text[:, None])
    return i, j, np.hstack(parts).astype(np.float32), logits


class RankerBlocks:
    """The fitted ranker as a block scorer (``entity_retro.found_at``, ``scoring.walk``): each entity's pooled
    candidates by the ranker's score, before every other candidate, those by the GNN's logit."""

    def __init__(self, ranker, inputs: Inputs):
        self.ranker, self.inputs = ranker, inputs
        self.seconds = 0.0  # spent scoring, the GNN's and the stack's planes included where this call made them

    def __call__(self, block: Block) -> np.ndarray:
        import time

        t0 = time.perf_counter()
        i, j, x, logits = block_rows(self.inputs, block)
        out = np.minimum(logits, OUTSIDE / 2)
        out[i, j] = OUTSIDE + self.ranker.predict(x)
        self.seconds += time.perf_counter() - t0
        return out

    def pairs(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The scores of a list of pairs of few sources (a named entity's candidates), read from their rows."""
        sources = np.unique(src)
        space = self.inputs.space
        block = Block(sources, space.block(sources).valid)
        return self(block)[np.searchsorted(sources, src), np.searchsorted(space.dst, dst)]


@dataclass
class Rows:
    """Rows a ranker is fit or checked on: features, labels, the entity of each row (contiguous), its population."""

    x: np.ndarray
    y: np.ndarray
    group: np.ndarray
    population: np.ndarray  # per row: "known" | "cold"
    names: list[str]

    def select(self, keep: np.ndarray) -> "Rows":
        return Rows(self.x[keep], self.y[keep], self.group[keep], self.population[keep], self.names)

    def with_answers(self) -> "Rows":
        """The entities with an answer among their rows (lambdarank learns nothing from the others)."""
        return self.select(np.isin(self.group, np.unique(self.group[self.y == 1])))

    def without_text(self) -> "Rows":
        return Rows(self.x[:, :-1], self.y, self.group, self.population, self.names[:-1]) \
            if self.names[-1] == "text" else self


@dataclass
class Window:
    """The fit window's pooled rows, built in one pass (``window``): per row its features, entity, population
    and whether it is an answer of the whole window, of the validation part or of the test part; per entity
    with test-part answers, how many it has over all its candidates; and per baseline of the check, each such
    entity's (hits@10, NDCG@10) over all its candidates (``baseline``)."""

    x: np.ndarray
    group: np.ndarray
    population: np.ndarray
    y_all: np.ndarray
    y_val: np.ndarray
    y_test: np.ndarray
    names: list[str]
    n_test: dict
    baseline: dict

    def rows(self, y: np.ndarray, keep: np.ndarray | None = None) -> Rows:
        out = Rows(self.x, y.astype(np.int8), self.group, self.population, self.names)
        return out if keep is None else out.select(keep)

    def whole(self) -> Rows:
        """Every held-out answer a label: what the page's ranker is fit on."""
        return self.rows(self.y_all).with_answers()

    def validation(self) -> Rows:
        """The validation part's answers the labels; a test-part answer is a true link, not a negative."""
        return self.rows(self.y_val, ~(self.y_test & ~self.y_val)).with_answers()

    def test(self) -> Rows:
        """The check's rows: the test part's answers the labels; a validation answer is known, not ranked."""
        keep = np.isin(self.group, np.fromiter(self.n_test, dtype=np.int64, count=len(self.n_test))) & ~self.y_val
        return self.rows(self.y_test, keep)


def held_out_positives(split) -> pl.DataFrame:
    """Every held-out positive of the split (both parts, any year): src, dst, year, part."""
    return pl.concat([split.part(p).filter(pl.col("label") == 1).select("src", "dst", "year").with_columns(part=pl.lit(p))
                      for p in ("val", "test")])


IDEAL = np.cumsum(1.0 / np.log2(np.arange(10) + 2.0))  # NDCG@10's best DCG for 1..10 answers


def window(split, inputs_for: Callable[[KG], Inputs], seed: int = 0, max_groups: int = MAX_GROUPS,
           block_pairs: int = 1 << 18, text: bool = False, baselines: dict | None = None) -> Window:
    """The fit window (module docstring) in one pass over its entities: their pools and features from the feature
    graph (``inputs_for(graph)``: the base rankings there, the GNN passing messages over it), each row's answers
    of either held-out part, and the check's ``baselines`` (key -> a function of ``Inputs`` giving a block scorer,
    or None) ranked over every candidate of the entities with test-part answers, validation answers set aside."""
    rows, graphs = held_out_rows(split)
    if graphs["val"] is not graphs["test"]:
        raise ValueError("the per-entity ranker reads its window from one feature graph; the split's validation and "
                         "test parts have two (split.graph_cut=time?)")
    graph = graphs["val"]
    n = graph.num_nodes
    labels = rows.filter(pl.col("label") == 1)
    keys_of = lambda df: np.unique(df["src"].to_numpy() * n + df["dst"].to_numpy())  # noqa: E731
    all_keys, val_keys = keys_of(labels), keys_of(labels.filter(pl.col("part") == "val"))
    test_keys = keys_of(labels.filter(pl.col("part") == "test"))
    every = held_out_positives(split)
    masked = np.setdiff1d(every["src"].to_numpy() * n + every["dst"].to_numpy(), all_keys)  # true, dated by D: no label
    sources = labels.unique("src", maintain_order=True).sort("src")
    rng = np.random.default_rng(seed)
    keep = []
    for pop in POPULATIONS:
        s = sources.filter(pl.col("population") == pop)["src"].to_numpy()
        keep.append(np.sort(rng.choice(s, max_groups, replace=False)) if len(s) > max_groups else s)
    chosen = np.sort(np.concatenate(keep))
    inputs = inputs_for(graph)
    if text and inputs.text is None:
        raise ValueError("window(text=True) needs inputs with a text model")
    if not text:
        inputs = Inputs(inputs.space, inputs.feats, inputs.gnn)
    scorers = {k: made for k, make in (baselines or {}).items() if (made := make(inputs)) is not None}
    space = inputs.space
    size = space.block_size(block_pairs)
    parts = {k: [] for k in ("x", "g", "all", "val", "test")}
    n_test, base = {}, {k: {} for k in scorers}
    for lo in tqdm(range(0, len(chosen), size), desc=f"per-entity ranker: pool {len(chosen):,} entities", unit="block",
                   leave=False):
        src = chosen[lo : lo + size]
        keys = src[:, None] * n + space.dst[None, :]
        valid = space.block(src).valid & ~np.isin(keys, masked)
        block = Block(src, valid)
        i, j, x, logits = block_rows(inputs, block)
        for k, v in (("x", x), ("g", src[i]), ("all", np.isin(keys[i, j], all_keys)), ("val", np.isin(keys[i, j], val_keys)),
                     ("test", np.isin(keys[i, j], test_keys))):
            parts[k].append(v)
        # the check's baselines over every candidate of the entities with test answers, validation answers aside
        is_test = np.isin(keys, test_keys) & valid
        checked = is_test.any(axis=1)
        if checked.any():
            rows_c, valid_c = np.flatnonzero(checked), valid & ~np.isin(keys, val_keys)
            for r in rows_c:
                n_test[int(src[r])] = int(is_test[r].sum())
            for k, scorer in scorers.items():
                s = logits if scorer is inputs.gnn else np.asarray(scorer(block), dtype=np.float64)
                rank = _row_ranks(s[rows_c], valid_c[rows_c])
                top = is_test[rows_c] & (rank < 10)
                gain = np.where(top, 1.0 / np.log2(rank + 2.0), 0.0).sum(axis=1)
                for r, hit, g in zip(rows_c, top.any(axis=1), gain):
                    base[k][int(src[r])] = (float(hit), float(g / IDEAL[min(n_test[int(src[r])], 10) - 1]))
    g = np.concatenate(parts["g"])
    order = np.argsort(g, kind="stable")
    take = lambda k: np.concatenate(parts[k])[order]  # noqa: E731
    return Window(np.vstack(parts["x"])[order], g[order], np.where(graph.known[g[order]], "known", "cold"), take("all"),
                  take("val"), take("test"), columns(inputs.feats, text), n_test, base)


# -- fit, check, choice ----------------------------------------------------------------------------------
VARIANTS = {"ltr": "Per-entity ranker (text)", "ltr_no_text": "Per-entity ranker"}  # key -> its row label
WITH_TEXT = ("ltr",)  # ranked on the rows within the horizon only: its text costs ~4-5 ms a pair (entity_retro.evaluate)


@dataclass
class Fitted:
    """The fitted variants (key -> ``EntityRanker``), the pre-cutoff check's figures (``check``: per
    population and list, hits@10 and NDCG@10 of the test part's entities ranked by each list fit on the
    validation part), the list each population reads (``choice``) and the fit's seconds."""

    rankers: dict
    check: dict
    choice: dict
    seconds: float = 0.0

    def metrics(self) -> dict[str, float]:
        out = {f"ltr_check_{k}": float(v) for k, v in self.check.items()}
        out |= {f"ltr_{v}_rounds": float(r.rounds) for v, r in self.rankers.items()}
        return out | {"ltr_fit_seconds": self.seconds}


def check(w: Window, rankers: dict) -> tuple[dict, dict]:
    """The pre-cutoff check (validation rows only): the test part's entities of the window ranked by each variant
    fit on the validation part (``rankers``) within their pools, and by the baselines over all their candidates
    (``Window.baseline``), hits@10 and NDCG@10 per population; each population reads the list with the best
    hits@10 (NDCG@10 breaks a tie). A pool holds each base ranking's top 30, so a ranker's first 10 are its
    pool's first 10. Returns (figures, choice)."""
    t = w.test()
    got: dict[str, dict[int, tuple[float, float]]] = {k: dict(v) for k, v in w.baseline.items()}
    for k, r in rankers.items():
        rows = t if "text" in r.names else t.without_text()
        score = r.predict(rows.x)
        got[k] = {}
        for grp in np.unique(rows.group):
            at = np.flatnonzero(rows.group == grp)
            order = at[np.argsort(-score[at], kind="stable")][:10]
            gain = (rows.y[order] / np.log2(np.arange(len(order)) + 2.0)).sum()
            got[k][int(grp)] = (float(rows.y[order].any()), float(gain / IDEAL[min(w.n_test[int(grp)], 10) - 1]))
    population = dict(zip(t.group.tolist(), t.population.tolist()))
    figures, choice = {}, {}
    for pop in POPULATIONS:
        groups = [g for g in w.n_test if population.get(g) == pop]
        if not groups:
            continue
        figures[f"{pop}_entities"] = float(len(groups))
        means = {k: (np.mean([v.get(g, (0.0, 0.0))[0] for g in groups]), np.mean([v.get(g, (0.0, 0.0))[1] for g in groups]))
                 for k, v in got.items()}
        for k, (hits, ndcg) in means.items():
            figures[f"{pop}_{k}_hits_at_10"], figures[f"{pop}_{k}_ndcg_at_10"] = float(hits), float(ndcg)
        choice[pop] = max(means, key=lambda k: means[k])
    return figures, choice


def choice_note(check: dict, population: str, chosen: str, labels: dict) -> str:
    """The page's sentence on why a population reads ``chosen`` (``check_and_choose``'s figures): "Why this list
    (Per-entity ranker): on 120 entities known before the split's last years, its first 10 held an answer for 52%
    of them (GNN 49%, Stack (trees + GNN) 47%)." Empty without a check's figures."""
    who = {"known": "entities known", "cold": "entities first linked"}[population]
    mine = check.get(f"{population}_{chosen}_hits_at_10")
    label = labels.get(chosen, chosen)
    if mine is None:
        n = check.get("val_entities")
        return "" if n is None else f"Why this list ({label}): too few entities ({int(n)}) before the cutoff to compare lists."
    others = [f"{labels.get(k, k)} {100 * check[f'{population}_{k}_hits_at_10']:.0f}%" for k in labels
              if k != chosen and f"{population}_{k}_hits_at_10" in check]
    return (f"Why this list ({label}): on {int(check[f'{population}_entities']):,} {who} in the split's last years, "
            f"before the cutoff, its first 10 held an answer for {100 * mine:.0f}% of them"
            + (f" ({', '.join(others)})." if others else "."))


def fit(split, inputs_for: Callable[[KG], Inputs], variants: Sequence[str], baselines: dict, seed: int = 0,
        threads: int = 1, block_pairs: int = 1 << 18) -> Fitted:
    """Each variant (``VARIANTS``: with the text feature or without) fit on the whole window (both held-out
    parts), and the pre-cutoff check (``check``: the same variants fit on the validation part's answers rank the
    test part's entities, beside ``baselines``) with the list each population reads; with fewer than
    ``MIN_GROUPS`` validation entities there is no check, and each population reads the stack's list (else the
    GNN's). One pass builds every row (``window``); a check that built its own rows cost twice the window again
    (HPO 2015: the fit took 1,011 s, the window 5.5 min of it at load ~3)."""
    import time

    from hygrail.discovery.entity_ranker import MIN_GROUPS, EntityRanker

    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise ValueError(f"per-entity ranker variants {list(variants)}: expected some of {list(VARIANTS)}")
    t0 = time.perf_counter()
    w = window(split, inputs_for, seed, block_pairs=block_pairs, text="ltr" in variants, baselines=baselines)

    def fitted(rows: Rows) -> dict:
        return {v: EntityRanker((r := rows if v == "ltr" else rows.without_text()).names, seed, threads
                                ).fit(r.x, r.y, r.group) for v in variants}

    rankers = fitted(w.whole())
    val = w.validation()
    n_val = len(np.unique(val.group))
    if n_val >= MIN_GROUPS:
        figures, choice = check(w, fitted(val))
    else:  # too few validation entities to fit a check: the stack's list (the tables' lead before this ranker)
        figures = {"val_entities": float(n_val)}
        choice = {pop: "stack_with_gnn" if "stack_with_gnn" in baselines else "gnn" for pop in POPULATIONS}
    return Fitted(rankers, figures, choice, time.perf_counter() - t0)


def fit_cached(cache, key_parts: Sequence, split, inputs_for: Callable[[KG], Inputs], variants: Sequence[str],
               baselines: dict, seed: int = 0, threads: int = 1, block_pairs: int = 1 << 18) -> tuple[Fitted, bool]:
    """(``fit``'s result, whether it came from ``cache``): kept as LightGBM's model text and JSON (data only),
    keyed by ``key_parts`` (the GNN's triage key, the stack's features' options, the text model's key),
    the variants, the seed, this module's settings and LightGBM's version."""
    import json
    from pathlib import Path

    import lightgbm

    from hygrail.cache import DiskCache, content_key, load
    from hygrail.discovery.entity_ranker import VERSION, EntityRanker

    if cache is None:
        return fit(split, inputs_for, variants, baselines, seed, threads, block_pairs), False
    key = content_key(VERSION, list(key_parts), list(variants), sorted(baselines), int(seed), POOL_K, TEXT_K,
                      MAX_GROUPS, lightgbm.__version__)
    done: list[Fitted] = []

    def write(tmp: Path) -> None:
        done.append(fit(split, inputs_for, variants, baselines, seed, threads, block_pairs))
        for v, r in done[0].rankers.items():
            (tmp / v).mkdir()
            r.to_files(tmp / v)
        (tmp / "check.json").write_text(json.dumps({"check": done[0].check, "choice": done[0].choice,
                                                    "seconds": done[0].seconds}))

    def read(folder: Path) -> Fitted:
        if done:
            return done[0]
        rankers = {v: load(folder / v / "ranker.txt", lambda _, v=v: EntityRanker.from_files(folder / v, threads))
                   for v in variants}
        meta = load(folder / "check.json", lambda f: json.loads(f.read_text()))
        return Fitted(rankers, meta["check"], meta["choice"], 0.0)

    return DiskCache(Path(cache)).get_or_create(key, write, read, what="the per-entity ranker's models")


# -- what a discovery run builds (``discovery/run.py``) ----------------------------------------------------
@dataclass
class Built:
    """The per-entity ranker of one discovery run: the fit, and ``inputs(space, gnn_block)``: the base
    rankings over a scoring graph (the cut graph, or it with new entities' descriptions supplied)."""

    fitted: Fitted
    inputs: Callable[[CandidateSpace, Callable], Inputs]
    hit: bool = False

    def scorer(self, variant: str, graph_inputs: Inputs) -> RankerBlocks:
        r = self.fitted.rankers[variant]
        return RankerBlocks(r, graph_inputs if "text" in r.names else
                            Inputs(graph_inputs.space, graph_inputs.feats, graph_inputs.gnn))


def build(cfg, d: dict, split, triage, space: CandidateSpace, fitted_stack, variants: Sequence[str],
          threads: int) -> Built:
    """Fit (or read from the cache) the per-entity ranker's ``variants`` on the split's window, its base
    rankings read from the feature graph (the cached model passing messages over it); the text model
    (``discover.ltr_text``: ``hygrail.review.tuned``'s settings) trained on the split's training part,
    statements only. The stack's features are ``fitted_stack``'s where it is given (shared planes)."""
    from pathlib import Path

    from hygrail.discovery import stack
    from hygrail.discovery.scoring import GNNBlocks
    from hygrail.evidence.naturalize import NoEvidence
    from hygrail.review import tuned
    from hygrail.stages import plain
    from hygrail.triage.train import Scorer, load_scorer

    seed, cache, rel = int(cfg.seed), Path(cfg.paths.cache), split.relation
    compatible = d.get("compatible") if (d.get("compatible") or {}).get("via") else None
    names = fitted_stack.names if fitted_stack is not None else stack.names_for(space.kg, rel, cfg.backbone)
    text_model: list = []  # the trained text model while it is needed (freed after the fit, read again to score)
    text_key = None
    if "ltr" in variants:
        settings = tuned.settings_of(d.get("ltr_text") or {})
        mode = NoEvidence({"mode": "none"}, plain(cfg.relation)["templates"])
        rows = tuned.sample_rows(tuned.training_part(split), mode, rel, settings)
        text_model.append(tuned.train(rows, settings, cache / "tuned"))
        text_key = text_model[0].key
    said: dict[tuple[int, int], float] = {}  # the statement reads the two names only: one score a pair, any graph

    def text_of(graph: KG):
        if text_key is None:
            return None

        def score(src, dst):
            pairs = list(zip(np.asarray(src).tolist(), np.asarray(dst).tolist()))
            new = sorted({p for p in pairs if p not in said})
            if new:
                if not text_model:  # read again from the cache (tuned.train's key hashes the same rows and settings)
                    text_model.append(tuned.train(rows, settings, cache / "tuned", progress=False))
                s, t = np.array([p[0] for p in new]), np.array([p[1] for p in new])
                first, second = tuned.texts(mode, graph, rel, s, t)
                said.update(zip(new, text_model[0].logits(first, second).tolist()))
            return np.array([said[p] for p in pairs])
        return score

    def features(where: CandidateSpace):
        """The stack's features over ``where``: the fitted stack's own (its scorer's planes are reused), else new."""
        if fitted_stack is not None:
            return fitted_stack.features(where)
        return stack.Features(where.kg, rel, compatible, names, where.dst)

    def inputs(where: CandidateSpace, gnn_block) -> Inputs:
        return Inputs(where, features(where), gnn_block, text_of(where.kg))

    memo: dict[int, Inputs] = {}

    def inputs_for(graph: KG) -> Inputs:
        """A feature graph's base rankings: the cached model passing messages over it."""
        if id(graph) not in memo:
            where = CandidateSpace(graph, rel)
            scorer = load_scorer(split, plain(cfg.backbone), seed, cache / "triage", int(d["encode_edges"]),
                                 graph=graph)
            memo[id(graph)] = Inputs(where, stack.Features(graph, rel, compatible, names, where.dst),
                                     stack.Memo(GNNBlocks(scorer, where)), text_of(graph))
        return memo[id(graph)]

    heads: list[dict] = []  # the stack's validation-fit heads, fit only when the check runs (a cached fit skips it)

    def stack_heads(inputs: Inputs):
        if not heads:
            heads.append(stack.validation_heads(split, triage.scores, compatible, names, seed))
        if "known" not in heads[0]:
            return None
        return stack.StackBlocks(heads[0], "with_gnn", inputs.feats, inputs.gnn, Scorer.probability,
                                 inputs.space.kg.known)

    baselines = {"gnn": lambda inputs: inputs.gnn, "stack_with_gnn": stack_heads}
    key = [triage.scores.key, compatible or {}, None if names is None else names.model, text_key]
    fitted, hit = fit_cached(cache / "ltr", key, split, inputs_for, variants, baselines, seed, threads,
                             int(d["block_pairs"]))
    # the feature graph's model and features, the window's rows and the text model are not needed after the fit: the
    # whole-space evaluation that follows holds the cell's peak (HPO 2018: 4.8 GB with them resident, 2026-12-07)
    memo.clear()
    text_model.clear()
    release_memory()
    return Built(fitted, inputs, hit)


def release_memory() -> None:
    """Collect garbage and hand glibc's free arenas back to the system (``malloc_trim``): freed numpy and torch
    buffers otherwise stay in the process's resident size, which is what a cell's peak counts."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass
