"""The per-entity retrospective (issues #28, #45, #54, #55): how well each ranking orders one entity's own
candidates against what that entity gained after the cutoff, the list a scientist reads.

Rows (``evaluate``), each a population of source entities scored on its own answers:

- ``KNOWN_ROW``: entities known at the cutoff that gain an edge within the horizon (the headline's,
  ``discover.horizons``' middle: 3 years), scored on those answers only, the horizon of the
  whole-space headline and of the new-entity row (issue #54: this row had counted answers of any later
  year, up to 13 years on HPO);
- ``KNOWN_ANY_ROW``: the same entities' answers of any later year, labelled apart;
- ``NEW_ROW``: entities unknown at the cutoff, first linked within the horizon, on their answers within
  it (``retro.Future.new_within``): the cold-start task as a user meets it, the entity given by its name
  or composition (a material's composition is supplied at scoring time only: ``KG.describe``);
- ``NEW_ANY_ROW``: every entity first linked after the cutoff, on answers of any later year.

Each method ranks all of an entity's candidates (ties by ``space.tiebreak``); per entity: hits@k (some
answer in the top k), recall@k, P@k (answers in the top k over k), all@k (every answer there) at
``discover.entity_ks`` and NDCG@10 (``NDCG_K``: the answers' discounted gain in the top 10 over the
best possible); means over entities with standard errors (sample standard deviation / sqrt(n)). A known
entity's candidates are a run of the whole-space list, so its row is counted on the vectors the
retrospective tables rank (``RowHits``, no second scoring pass); the other rows are ranked here
(``found_at``).

``lift``: per measure (hits@10, P@10, NDCG@10) the paired difference, entity by entity, between each
learned ranking and the best other ranking of its row by that measure's mean, with its standard error:
every ranking of another ``family`` (a ranking's own variants, e.g. the stack's, are never its
baseline), learned ones included (issue #45). ``name_reliance``: how much the stack's cold-start rows
lean on names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import polars as pl
import scipy.sparse as sp
from tqdm import tqdm

from hygrail.baselines.structural import relation_degree
from hygrail.discovery.space import CandidateSpace, row_bounds, tiebreak
from hygrail.kg import DataError

Scorer = Callable  # block -> S x D ranking scores (higher first)
NDCG_K = 10  # the list a page shows (discover.entity_k's first 10; issue #55's measure)
MEASURES = ("hits", "precision", "ndcg")  # the lifts' measures, at k = 10
LEARNED = {"gnn": "GNN", "tsh": "TSH"}
KNOWN_ROW = "known at the cutoff"
KNOWN_ANY_ROW = "known at the cutoff, any later year (any-year answers)"
NEW_ROW = "new: first linked within the horizon"
NEW_ANY_ROW = "new: first linked at any later year (any-year answers)"
ROWS = (KNOWN_ROW, KNOWN_ANY_ROW, NEW_ROW, NEW_ANY_ROW)
PREFIX = {KNOWN_ROW: "retro_entity_", KNOWN_ANY_ROW: "retro_entity_known_any_", NEW_ROW: "retro_entity_new_",
          NEW_ANY_ROW: "retro_entity_new_any_"}  # MLflow's metric names per row


@dataclass
class Found:
    """One row's entities (``sources``, their ``n_answers``) and, per method, the answers in its top k
    (``hits``: entities x ks) and its DCG@``NDCG_K`` (``dcg``: per entity)."""

    sources: np.ndarray
    n_answers: np.ndarray
    hits: dict[str, np.ndarray] = field(default_factory=dict)
    dcg: dict[str, np.ndarray] = field(default_factory=dict)

    def add(self, name: str, hits: np.ndarray, dcg: np.ndarray) -> None:
        self.hits[name], self.dcg[name] = hits, dcg

    def only(self, names: Sequence[str]) -> "Found":
        """The methods ``names`` (in that order), those this row holds."""
        keep = [n for n in names if n in self.hits]
        return Found(self.sources, self.n_answers, {n: self.hits[n] for n in keep}, {n: self.dcg[n] for n in keep})

    def merged(self, other: "Found") -> "Found":
        if not np.array_equal(self.sources, other.sources):
            raise ValueError("Found.merged: the two rows hold different entities")
        return Found(self.sources, self.n_answers, self.hits | other.hits, self.dcg | other.dcg)

    def ndcg(self, name: str) -> np.ndarray:
        """NDCG@``NDCG_K`` per entity: DCG over the best DCG its answers allow."""
        ideal = np.cumsum(1.0 / np.log2(np.arange(NDCG_K) + 2.0))[np.minimum(self.n_answers, NDCG_K) - 1]
        return self.dcg[name] / ideal


def _gains(rank: np.ndarray) -> np.ndarray:
    """Each answer's discounted gain at its 0-based place: 1 / log2(place + 2) inside the top ``NDCG_K``."""
    return np.where(rank < NDCG_K, 1.0 / np.log2(rank + 2.0), 0.0)


def found_at(space: CandidateSpace, scorers: Mapping[str, Scorer], future_src: np.ndarray, future_dst: np.ndarray,
             ks: Sequence[int], seed: int, block_pairs: int) -> Found:
    """Each source entity with answers (future_src[i], future_dst[i]), all of its candidates ranked by
    each method (ties by ``tiebreak``, as ``space.ranking``): the answers in each top k and the DCG."""
    if space.same_type:
        raise DataError(f"relation {space.relation.name}: the per-entity evaluation needs a relation between two "
                        f"node types (each entity's candidates are one row of the space)")
    n = space.kg.num_nodes
    answers = sp.csr_matrix((np.ones(len(future_src)), (future_src, future_dst)), shape=(n, n))
    sources = np.unique(future_src)
    cols = np.minimum(np.asarray(ks), len(space.dst)) - 1
    hits = {name: [] for name in scorers}
    dcg = {name: [] for name in scorers}
    size = space.block_size(block_pairs)
    for lo in tqdm(range(0, len(sources), size), desc=f"rank {len(sources):,} entities' candidates", unit="block",
                   leave=False):
        block = space.block(sources[lo : lo + size])
        row, col = np.nonzero(answers[block.src][:, space.dst].toarray() > 0)
        tie = tiebreak(np.repeat(block.src, len(space.dst)), np.tile(space.dst, len(block.src)), seed)
        tie = tie.reshape(block.valid.shape)
        for name, score in scorers.items():
            s = np.where(block.valid, np.asarray(score(block), dtype=np.float64), -np.inf)  # non-candidates last
            rank = place_in_row(s[row], s[row, col][:, None], lambda: (tie[row], tie[row, col][:, None]))
            hit = np.zeros((len(block.src), len(cols)), dtype=np.int64)
            np.add.at(hit, row, rank[:, None] <= cols[None, :])
            gain = np.zeros(len(block.src))
            np.add.at(gain, row, _gains(rank))
            hits[name].append(hit)
            dcg[name].append(gain)
    found = Found(sources, np.asarray(answers[sources].sum(axis=1)).ravel().astype(np.int64))
    for name in scorers:
        found.add(name, np.concatenate(hits[name]) if hits[name] else np.zeros((0, len(ks)), np.int64),
                  np.concatenate(dcg[name]) if dcg[name] else np.zeros(0))
    return found


class RowHits:
    """``found_at``'s known row, read from whole-space score vectors instead of scoring the entities'
    rows again. A known source's candidates are one contiguous run of a walk-order vector
    (``CandidateSpace.pairs``: ``src_all``, ``dst_all``; ``pos``: the answers' positions there,
    ``CandidateSpace.positions``), so each answer's rank in its row is counted on
    that run, in ``found_at``'s order (score, then ``tiebreak``). ``add`` takes each method's vector
    while the retrospective holds it (``retro.retrospective``'s ``tap``); ``found`` is then what
    ``found_at`` returns for those methods. That second scoring pass took 349 s of the whole HPO 2018
    cell's 2,158 (2026-12-04); counting took 0.1 s a method (0.4 s with ties everywhere) for 8,000
    answers in 3,000 rows of 15 k candidates."""

    def __init__(self, src_all: np.ndarray, dst_all: np.ndarray, pos: np.ndarray, ks: Sequence[int], n_dst: int,
                 seed: int):
        pos = np.unique(np.asarray(pos, dtype=np.int64))  # a pair is one answer (found_at's 0/1 matrix)
        if (pos < 0).any():
            raise ValueError("RowHits: a future edge is no candidate of the space; its row cannot be read")
        self.src_all, self.dst_all, self.pos, self.seed = src_all, dst_all, pos, int(seed)
        owner = np.asarray(src_all[pos], dtype=np.int64)  # sorted with pos: walk order is source-major
        sources, first, n_answers = np.unique(owner, return_index=True, return_counts=True)
        self.found = Found(sources, n_answers.astype(np.int64))
        self.first = np.r_[first, len(pos)]
        self.lo, self.hi = row_bounds(src_all, sources)
        self.cols = np.minimum(np.asarray(ks), n_dst) - 1

    @property
    def sources(self) -> np.ndarray:
        return self.found.sources

    def add(self, name: str, scores: np.ndarray) -> None:
        """Count the answers' ranks in their rows of ``scores`` (every candidate, walk order)."""
        n = len(self.found.sources)
        hit, gain = np.zeros((n, len(self.cols)), dtype=np.int64), np.zeros(n)
        for i in range(n):
            lo, hi = self.lo[i], self.hi[i]
            at = self.pos[self.first[i] : self.first[i + 1]]
            rank = place_in_row(scores[lo:hi], scores[at][:, None], lambda: self._ties(lo, hi, at))
            hit[i] = np.count_nonzero(rank[:, None] <= self.cols[None, :], axis=0)
            gain[i] = _gains(rank).sum()
        self.found.add(name, hit, gain)

    def _ties(self, lo: int, hi: int, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tb = tiebreak(self.src_all[lo:hi], self.dst_all[lo:hi], self.seed)
        return tb, tb[at - lo][:, None]


def place_in_row(row: np.ndarray, mine: np.ndarray, ties: Callable[[], tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Each answer's 0-based place in its row as ``space.ranking`` orders it: the candidates scored
    higher, then those tied with it that the tiebreak puts first. ``row``: the row's scores (one
    row, or one per answer); ``mine``: the answers' scores, a column; ``ties()``: the row's and the
    answers' tiebreaks, asked for only where an answer ties with another candidate (each ties with
    itself). A few answers a row: comparing each with its row is much cheaper than sorting it."""
    rank = np.count_nonzero(row > mine, axis=-1)
    tied = row == mine
    if np.count_nonzero(tied) > len(mine):
        tb_row, tb_mine = ties()
        rank += np.count_nonzero(tied & (tb_row < tb_mine), axis=-1)
    return rank


# -- the measures -------------------------------------------------------------------------------------
def _at_10(ks: Sequence[int]) -> int:
    """The index of k = 10 in ``ks`` (else of the largest k): the list size the lifts compare at."""
    return list(ks).index(10) if 10 in ks else len(ks) - 1


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def per_entity_values(found: Found, name: str, measure: str, ks: Sequence[int]) -> np.ndarray:
    """One method's per-entity value of ``measure`` (``MEASURES``) at k = 10 (else the largest k)."""
    j = _at_10(ks)
    if measure == "hits":
        return (found.hits[name][:, j] > 0).astype(np.float64)
    if measure == "precision":
        return found.hits[name][:, j] / float(ks[j])
    return found.ndcg(name)


def summarise(found: Found, labels: Mapping[str, str], ks: Sequence[int]) -> pl.DataFrame:
    """One row per method: hits@k, recall@k and P@k at each k, all@k at the largest k <= 10, NDCG@10
    (means over entities) and their standard errors."""
    j_all = max((j for j, k in enumerate(ks) if k <= 10), default=0)
    rows = []
    for name, f in found.hits.items():
        row = {"method": labels[name], "entities": len(found.n_answers)}
        parts = [("hits", j, f[:, j] > 0) for j in range(len(ks))] + \
                [("recall", j, f[:, j] / found.n_answers) for j in range(len(ks))] + \
                [("precision", j, f[:, j] / float(ks[j])) for j in range(len(ks))] + \
                [("all", j_all, f[:, j_all] == found.n_answers)]
        for metric, j, values in parts:
            row[f"{metric}_at_{ks[j]}"], row[f"{metric}_at_{ks[j]}_se"] = _mean_se(values)
        row[f"ndcg_at_{NDCG_K}"], row[f"ndcg_at_{NDCG_K}_se"] = _mean_se(found.ndcg(name))
        rows.append(row)
    return pl.DataFrame(rows)


def family(method: str) -> str:
    """The methods that are one ranking's variants (the stack's, the per-entity ranker's), whose margins are
    never taken against each other: a margin is against the best ranking of another family."""
    return "stack" if method.startswith("stack_") else "ltr" if method.startswith("ltr") else method


def lift(found: Found, ks: Sequence[int], learned: Mapping[str, str] = LEARNED
         ) -> tuple[dict[str, dict[str, str]], int, dict]:
    """(measure -> each ``learned`` method's best other ranking by that measure, k, metrics): k = 10
    (else the largest k); for each measure of ``MEASURES`` and ``learned`` method, the paired difference
    entity by entity against the best by mean of every ranking in ``found`` outside its own
    ``family`` (learned ones included: TSH, the GNN alone, the trees), with its standard error.
    Metric keys: ``<method>_lift_<measure>_at_<k>`` and ``..._se`` (``hits`` keeps issue #45's names)."""
    j = _at_10(ks)
    best: dict[str, dict[str, str]] = {m: {} for m in MEASURES}
    out = {}
    for measure in MEASURES:
        values = {name: per_entity_values(found, name, measure, ks) for name in found.hits}
        for m in learned:
            others = [o for o in found.hits if family(o) != family(m)]
            if m not in values or not others:
                continue
            b = max(others, key=lambda o: values[o].mean())
            best[measure][m] = b
            key = f"{m}_lift_{measure}_at_{ks[j] if measure != 'ndcg' else NDCG_K}"
            out[key], out[f"{key}_se"] = _mean_se(values[m] - values[b])
    return best, int(ks[j]), out


def per_entity(space: CandidateSpace, found: Found, labels: Mapping[str, str], ks: Sequence[int], row: str
               ) -> pl.DataFrame:
    """One row per entity of ``found``: its name, ``row``, answers, its relation degree and all-edge
    degree in the cut graph, and each method's hits@10 (else the largest k), P@10 and NDCG@10: where a
    ranking loses per entity, and to what (``bench/error_analysis.py``)."""
    j = _at_10(ks)
    kg, sources = space.kg, found.sources
    cols = {}
    for m in found.hits:
        cols[f"hits@{ks[j]} {labels[m]}"] = (found.hits[m][:, j] > 0).astype(np.int8)
        cols[f"P@{ks[j]} {labels[m]}"] = found.hits[m][:, j] / float(ks[j])
        cols[f"NDCG@{NDCG_K} {labels[m]}"] = found.ndcg(m)
    return pl.DataFrame({"id": sources, "entity": [kg.label(int(u)) for u in sources], "entities known": row,
                         "answers": found.n_answers.astype(np.int64),
                         "relation_degree": relation_degree(kg, space.relation)[sources].astype(np.int64),
                         "degree": np.asarray(kg.degree)[sources]} | cols)


def rows(found: Found, space: CandidateSpace, labels: Mapping[str, str], learned: Mapping[str, str],
         ks: Sequence[int], row: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the summary rows of one population of entities, with each learned method's lifts against the
    best other ranking, ``lift``; its per-entity rows)."""
    best, k, gains = lift(found, ks, learned)
    table = summarise(found, labels, ks).with_columns(pl.lit(row).alias("entities known"))
    names = list(found.hits)
    for measure in MEASURES:
        at = NDCG_K if measure == "ndcg" else k
        suffix = f"{measure}_at_{at}"
        table = table.with_columns(
            pl.Series(f"lift vs best other ({suffix})", [labels[best[measure][m]] if m in best[measure] else None
                                                          for m in names], pl.String),
            pl.Series(f"lift_{suffix}", [gains.get(f"{m}_lift_{suffix}") for m in names], pl.Float64),
            pl.Series(f"lift_{suffix}_se", [gains.get(f"{m}_lift_{suffix}_se") for m in names], pl.Float64))
    return table, per_entity(space, found, labels, ks, row)


def row_metrics(prefix: str, table: pl.DataFrame, found: Found, learned: Mapping[str, str],
                ks: Sequence[int]) -> dict[str, float]:
    """MLflow metrics of one row's table: ``<prefix><method>_<metric>`` and the learned methods' lifts."""
    out = {}
    for name, r in zip(found.hits, table.iter_rows(named=True)):
        out |= {f"{prefix}{name}_{k}": float(v) for k, v in r.items()
                if isinstance(v, (int, float)) and v is not None and k != "entities" and not k.startswith("lift")}
    out |= {f"{prefix}{key}": v for key, v in lift(found, ks, learned)[2].items()}
    return out


def name_reliance(retro: pl.DataFrame) -> str:
    """How much the stack's cold-start hits@10 leans on names: its variant without the GNN against the
    one without the GNN or the names' cosine (``stack.VARIANTS``), on the rows where both were ranked.
    The names are the release's (a disease's name at the cutoff is not recorded there)."""
    hits = [c for c in retro.columns if c.startswith("hits_at_") and not c.endswith("_se")]
    col = "hits_at_10" if "hits_at_10" in hits else (hits[-1] if hits else None)  # the lifts' list size
    parts = []
    for row in (NEW_ROW, NEW_ANY_ROW, KNOWN_ROW):
        r = {m: v for m, v in retro.filter(pl.col("entities known") == row).select("method", col).iter_rows()} \
            if col else {}
        a, b = r.get("Stack without GNN"), r.get("Stack without GNN or names")
        if a is not None and b is not None:
            parts.append(f"'{row}' {a:.3f} with names, {b:.3f} without ({b - a:+.3f})")
    return ("How much the stack leans on names (its variant without the GNN, with and without the names' cosine; "
            f"{col.replace('_at_', '@')}; the names are the release's, not those of the cutoff's date): "
            + "; ".join(parts) + ".") if parts else ""


# -- the rows of one cell ------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """The per-entity retrospective of one cell: one summary row per (row, method), one per (row,
    entity), MLflow metrics and the sentence the page prints over the table."""

    retro: pl.DataFrame | None = None
    each: pl.DataFrame | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    note: str = ""


def evaluate(space: CandidateSpace, scorers: Mapping[str, Scorer], labels: Mapping[str, str],
             learned: Mapping[str, str], future, cutoff: int, horizon: int, ks: Sequence[int], seed: int,
             block_pairs: int, known: Mapping[str, RowHits] | None = None, cold_space: CandidateSpace | None = None,
             cold_scorers: Mapping[str, Scorer] | None = None, horizon_only: Sequence[str] = ()) -> Evaluation:
    """The rows of the module docstring. ``scorers``: block scorers over ``space`` (the cut graph) for the
    known rows; ``known``: row -> its answers already counted on the whole-space vectors (``RowHits``) for
    the methods it holds, the rest ranked here; ``cold_space``, ``cold_scorers``: the space and scorers the
    new entities are ranked with (their compositions supplied, ``KG.describe``; default ``space``,
    ``scorers``); ``horizon_only``: methods ranked on the two rows within the horizon only, not on the
    any-year rows (the per-entity ranker with text: its cross-encoder costs ~4-5 ms a pair on one thread)."""
    out = Evaluation()
    known = dict(known or {})
    later = lambda row, given: given if row not in (KNOWN_ANY_ROW, NEW_ANY_ROW) else \
        {k: v for k, v in given.items() if k not in horizon_only}  # noqa: E731
    within = future.year <= cutoff + horizon
    for row, keep in ((KNOWN_ROW, within), (KNOWN_ANY_ROW, np.ones(len(within), dtype=bool))):
        if not keep.any():
            continue
        mine = later(row, scorers)
        if row in known:
            found = known[row].found
            rest = {k: v for k, v in mine.items() if k not in found.hits}
            if rest:
                found = found.merged(found_at(space, rest, future.src[keep], future.dst[keep], ks, seed, block_pairs))
            found = found.only(list(mine))
        else:
            found = found_at(space, mine, future.src[keep], future.dst[keep], ks, seed, block_pairs)
        _add(out, row, found, space, labels, learned, ks)
    cold_space, cold_scorers = cold_space or space, cold_scorers or scorers
    if len(future.new_src):
        new_within = future.new_within(cutoff, horizon)
        for row, keep in ((NEW_ROW, new_within), (NEW_ANY_ROW, np.ones(len(new_within), dtype=bool))):
            if keep.any():
                found = found_at(cold_space, later(row, cold_scorers), future.new_src[keep], future.new_dst[keep], ks,
                                 seed, block_pairs)
                _add(out, row, found, cold_space, labels, learned, ks)
    if out.retro is None:
        return out
    out.note = _note(out, space, future, horizon, labels, learned, ks)
    return out


def _add(out: Evaluation, row: str, found: Found, space: CandidateSpace, labels: Mapping[str, str],
         learned: Mapping[str, str], ks: Sequence[int]) -> None:
    table, each = rows(found, space, labels, learned, ks, row)
    out.retro = table if out.retro is None else pl.concat([out.retro, table], how="diagonal")
    out.each = each if out.each is None else pl.concat([out.each, each], how="diagonal")
    prefix = PREFIX[row]
    out.metrics |= row_metrics(prefix, table, found, learned, ks)
    out.metrics |= {f"{prefix}sources": float(len(found.sources)), f"{prefix}answers": float(found.n_answers.sum())}


def _note(out: Evaluation, space: CandidateSpace, future, horizon: int, labels: Mapping[str, str],
          learned: Mapping[str, str], ks: Sequence[int]) -> str:
    """What the rows are over, and the learned rankings' hits@10 lifts on the known row."""
    schema, rel, m = space.kg.schema, space.relation, out.metrics
    note = []
    if "retro_entity_sources" in m:
        note.append(f"Row '{KNOWN_ROW}': {int(m['retro_entity_sources']):,} {schema.display_name(rel.src)} entities "
                    f"known at the cutoff gain {int(m['retro_entity_answers']):,} {rel.label} edges within {horizon} "
                    f"years of it (between nodes known by then); row '{KNOWN_ANY_ROW}': their answers of any later "
                    f"year. Each method ranks all of an entity's candidates; mean ± standard error over the entities. "
                    f"'lift': the paired difference against the best other ranking of the row by that measure (every "
                    f"ranking but the method's own variants).")
        k = ks[_at_10(ks)]
        lifts = [f"{label} {m[f'retro_entity_{k_}_lift_hits_at_{k}']:+.3f} ± {m[f'retro_entity_{k_}_lift_hits_at_{k}_se']:.3f}"
                 for k_, label in learned.items() if f"retro_entity_{k_}_lift_hits_at_{k}" in m]
        if lifts:
            note.append(f"Paired hits@{k} lift on the known row against the best other ranking: " + "; ".join(lifts) + ".")
    if "retro_entity_new_sources" in m:
        note.append(f"Row '{NEW_ROW}': {int(m['retro_entity_new_sources']):,} entities unknown at the cutoff and "
                    f"first linked within {horizon} years of it, scored on their {int(m['retro_entity_new_answers']):,} "
                    f"answers within those years: the cold-start task as a user meets it, where the entity is given by "
                    f"its name or composition.")
    if "retro_entity_new_any_sources" in m:
        note.append(f"Row '{NEW_ANY_ROW}': every entity first linked after the cutoff, whenever, on answers of any "
                    f"later year (a different task: most of them were curated years later).")
    reliance = name_reliance(out.retro)
    if reliance:
        note.append(reliance)
    return " ".join(note)
