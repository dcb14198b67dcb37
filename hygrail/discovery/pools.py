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

The fit window (``window``): the split's held-out transitions (``data.split.held_out_rows``: the relation's
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
    """The fit window's rows: features, labels, the entity of each row (contiguous), its population."""

    x: np.ndarray
    y: np.ndarray
    group: np.ndarray
    population: np.ndarray  # per row: "known" | "cold"
    names: list[str]
    groups_seen: int = 0  # entities whose pools were built (with or without an answer in them)

    def select(self, keep: np.ndarray) -> "Rows":
        return Rows(self.x[keep], self.y[keep], self.group[keep], self.population[keep], self.names, self.groups_seen)


def held_out_positives(split) -> pl.DataFrame:
    """Every held-out positive of the split (both parts, any year): src, dst, year, part."""
    return pl.concat([split.part(p).filter(pl.col("label") == 1).select("src", "dst", "year").with_columns(part=pl.lit(p))
                      for p in ("val", "test")])


def window(split, inputs_for: Callable[[KG], Inputs], parts: Sequence[str] = ("val", "test"), seed: int = 0,
           max_groups: int = MAX_GROUPS, block_pairs: int = 1 << 18, text: bool = False) -> Rows:
    """The fit window's rows (module docstring) from the held-out parts ``parts``; ``inputs_for(graph)``:
    the base rankings over the feature graph (the GNN passing messages over it)."""
    rows, graphs = held_out_rows(split)
    if len({id(graphs[p]) for p in parts}) != 1:
        raise ValueError(f"the per-entity ranker reads its window from one feature graph; parts {list(parts)} have "
                         f"{len({id(graphs[p]) for p in parts})} (split.graph_cut=time?)")
    graph = graphs[parts[0]]
    labels = rows.filter((pl.col("label") == 1) & pl.col("part").is_in(list(parts)))
    n = graph.num_nodes
    label_keys = np.unique(labels["src"].to_numpy() * n + labels["dst"].to_numpy())
    every = held_out_positives(split)
    masked = np.setdiff1d(every["src"].to_numpy() * n + every["dst"].to_numpy(), label_keys)  # true, not labels
    sources = labels.unique("src", maintain_order=True).sort("src")
    rng = np.random.default_rng(seed)
    keep = []
    for pop in ("known", "cold"):
        s = sources.filter(pl.col("population") == pop)["src"].to_numpy()
        keep.append(np.sort(rng.choice(s, max_groups, replace=False)) if len(s) > max_groups else s)
    chosen = np.sort(np.concatenate(keep))
    inputs = inputs_for(graph)
    if text and inputs.text is None:
        raise ValueError("window(text=True) needs inputs with a text model")
    if not text:
        inputs = Inputs(inputs.space, inputs.feats, inputs.gnn)
    space = inputs.space
    size = space.block_size(block_pairs)
    xs, ys, gs = [], [], []
    for lo in tqdm(range(0, len(chosen), size), desc=f"per-entity ranker: pool {len(chosen):,} entities", unit="block",
                   leave=False):
        src = chosen[lo : lo + size]
        valid = space.block(src).valid.copy()
        keys = src[:, None] * n + space.dst[None, :]
        valid &= ~np.isin(keys, masked)
        i, j, x, _ = block_rows(inputs, Block(src, valid))
        y = np.isin(keys[i, j], label_keys).astype(np.int8)
        xs.append(x)
        ys.append(y)
        gs.append(src[i])
    x, y, g = np.vstack(xs), np.concatenate(ys), np.concatenate(gs)
    order = np.argsort(g, kind="stable")
    x, y, g = x[order], y[order], g[order]
    has = np.isin(g, np.unique(g[y == 1]))
    pop = np.where(graph.known[g], "known", "cold")
    return Rows(x, y, g, pop, columns(inputs.feats, text), len(chosen)).select(has)


# -- fit, check, choice ----------------------------------------------------------------------------------
VARIANTS = {"ltr": "Per-entity ranker (text)", "ltr_no_text": "Per-entity ranker"}  # key -> its row label
WITH_TEXT = ("ltr",)  # ranked on the rows within the horizon only: its text costs ~4-5 ms a pair (entity_retro.evaluate)
POPULATIONS = ("known", "cold")


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


def _hits(inputs: Inputs, scorers: dict, src: np.ndarray, dst: np.ndarray, masked: np.ndarray, block_pairs: int
          ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per scorer, each source's (hits@10, NDCG@10) ranking all its candidates (less ``masked`` keys) with
    answers (src[i], dst[i]); ties by column (the check compares lists, it reports no figure of the tables)."""
    space, n = inputs.space, inputs.space.kg.num_nodes
    sources = np.unique(src)
    answer = np.unique(src * n + dst)
    size = space.block_size(block_pairs)
    out = {name: ([], []) for name in scorers}
    ideal = np.cumsum(1.0 / np.log2(np.arange(10) + 2.0))
    for lo in range(0, len(sources), size):
        s = sources[lo : lo + size]
        keys = s[:, None] * n + space.dst[None, :]
        valid = space.block(s).valid & ~np.isin(keys, masked)
        block, is_answer = Block(s, valid), np.isin(keys, answer) & valid
        for name, scorer in scorers.items():
            rank = _row_ranks(np.asarray(scorer(block), dtype=np.float64), valid)
            top = is_answer & (rank < 10)
            gain = np.where(top, 1.0 / np.log2(rank + 2.0), 0.0).sum(axis=1)
            out[name][0].append(top.any(axis=1).astype(np.float64))
            out[name][1].append(gain / ideal[np.minimum(is_answer.sum(axis=1), 10) - 1])
    return {name: (np.concatenate(h), np.concatenate(g)) for name, (h, g) in out.items()}


def check_and_choose(split, inputs_for: Callable[[KG], Inputs], rankers: dict, baselines: dict, seed: int,
                     block_pairs: int) -> tuple[dict, dict]:
    """The pre-cutoff check (validation rows only): the test part's entities (at most ``MAX_GROUPS`` a
    population) ranked by each list fit on the validation part (``rankers``: key -> ranker fit on the
    validation window; ``baselines``: key -> a function of the feature graph's ``Inputs`` giving a block
    scorer, e.g. the GNN, the stack's validation-fit heads), hits@10 and NDCG@10 per population; each
    population reads the list with the best hits@10 (NDCG@10 breaks a tie). Returns (figures, choice)."""
    rows, graphs = held_out_rows(split)
    graph = graphs["test"]
    inputs = inputs_for(graph)
    labels = rows.filter((pl.col("label") == 1) & (pl.col("part") == "test"))
    n = graph.num_nodes
    every = held_out_positives(split)
    masked = np.setdiff1d(every["src"].to_numpy() * n + every["dst"].to_numpy(),
                          labels["src"].to_numpy() * n + labels["dst"].to_numpy())
    rng = np.random.default_rng(seed)
    figures, choice = {}, {}
    for pop in POPULATIONS:
        part = labels.filter(pl.col("population") == pop)
        sources = np.unique(part["src"].to_numpy())
        if not len(sources):
            continue
        if len(sources) > MAX_GROUPS:
            sources = np.sort(rng.choice(sources, MAX_GROUPS, replace=False))
        part = part.filter(pl.col("src").is_in(sources))
        scorers = {k: made for k, make in baselines.items() if (made := make(inputs)) is not None}
        scorers |= {k: RankerBlocks(r, inputs if "text" in r.names else Inputs(inputs.space, inputs.feats, inputs.gnn))
                    for k, r in rankers.items()}
        got = _hits(inputs, scorers, part["src"].to_numpy(), part["dst"].to_numpy(), masked, block_pairs)
        figures[f"{pop}_entities"] = float(len(sources))
        for name, (hits, ndcg) in got.items():
            figures[f"{pop}_{name}_hits_at_10"], figures[f"{pop}_{name}_ndcg_at_10"] = float(hits.mean()), float(ndcg.mean())
        choice[pop] = max(got, key=lambda k: (got[k][0].mean(), got[k][1].mean()))
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
    parts), and the pre-cutoff check (``check_and_choose``: the same variants fit on the validation part's
    window, scored on the test part's entities beside ``baselines``) with the list each population reads;
    with fewer than ``MIN_GROUPS`` validation entities there is no check, and each population reads the
    stack's list (else the GNN's)."""
    from hygrail.discovery.entity_ranker import MIN_GROUPS, EntityRanker

    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise ValueError(f"per-entity ranker variants {list(variants)}: expected some of {list(VARIANTS)}")
    import time

    t0 = time.perf_counter()
    text = "ltr" in variants

    def fitted(rows: Rows) -> dict:
        out = {}
        for v in variants:
            r = rows if v == "ltr" or not text else Rows(rows.x[:, :-1], rows.y, rows.group, rows.population,
                                                         rows.names[:-1], rows.groups_seen)
            out[v] = EntityRanker(r.names, seed, threads).fit(r.x, r.y, r.group)
        return out

    rankers = fitted(window(split, inputs_for, ("val", "test"), seed, block_pairs=block_pairs, text=text))
    val = window(split, inputs_for, ("val",), seed, block_pairs=block_pairs, text=text)
    if len(np.unique(val.group)) >= MIN_GROUPS:
        figures, choice = check_and_choose(split, inputs_for, fitted(val), baselines, seed, block_pairs)
    else:  # too few validation entities to fit a check: the stack's list (the tables' lead before this ranker)
        figures = {"val_entities": float(len(np.unique(val.group)))}
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
    text_model, text_key = None, None
    if "ltr" in variants:
        settings = tuned.settings_of(d.get("ltr_text") or {})
        mode = NoEvidence({"mode": "none"}, plain(cfg.relation)["templates"])
        rows = tuned.sample_rows(tuned.training_part(split), mode, rel, settings)
        text_model = tuned.train(rows, settings, cache / "tuned")
        text_key = text_model.key

    said: dict[tuple[int, int], float] = {}  # the statement reads the two names only: one score a pair, any graph

    def text_of(graph: KG):
        if text_model is None:
            return None

        def score(src, dst):
            pairs = list(zip(np.asarray(src).tolist(), np.asarray(dst).tolist()))
            new = sorted({p for p in pairs if p not in said})
            if new:
                s, t = np.array([p[0] for p in new]), np.array([p[1] for p in new])
                first, second = tuned.texts(mode, graph, rel, s, t)
                said.update(zip(new, text_model.logits(first, second).tolist()))
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
    memo.clear()  # the feature graph's model and features are not needed after the fit
    return Built(fitted, inputs, hit)
