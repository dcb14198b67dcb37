"""Retrospective evaluation: did discovery find what the literature later found?

With ``discover.cutoff=YEAR`` everything (training, calibration, evidence, candidate exclusion)
sees only the edges dated <= YEAR (``KG.until``); the answers are the relation's edges first dated
after YEAR between two nodes already known by then (``KG.known``: a dated edge by then, or created
by then; a static edge, such as a composition, does not make a node known). An edge to an entity
first known later is not a candidate of the whole space; those are counted apart as
``future_unreachable`` and are the per-entity task's new-entity row, where the entity is given. Undated edges
are neither answers nor misses: ``KG.until`` masks them, so no ranking holds them and none is
penalised for a real link whose date is unknown (counted as ``retro_undated_excluded``). A future
edge the ontology already implies at the cutoff (an ancestor of a known annotation) is no
candidate either and is counted as ``future_implied``.

Every ranking is a list over the whole candidate space (ties broken by ``space.tiebreak``), scored
by precision@K, recall@K (against all reachable future edges) and average precision (the mean,
over the future edges, of the precision at each one's position in that list). The HyGRAIL ranking
is the one the report lists (``discover.order``):

- ``paper`` (``hygrail_order``): the candidates it accepts first: those above b* (by GNN score),
  then those the LLM accepted (by its confidence), then the rest by GNN score, and the ones the LLM
  rejected last. The reviews go to the best-scored *routed* candidates, below b*; when more than
  the list's length lies above b* (usual in discovery), the reviewer never changes what a person
  reads.
- ``reviewed`` (``reviewed_order``): the reviews go to the head of the GNN's list (its best N,
  whatever their region); the reviewed candidates the rule accepts come first (by the combined
  probability under ``llm.decision=calibrated``, else by the reviewer's confidence), then every
  unreviewed candidate in GNN order, and the reviewed ones the rule rejects last: below the whole
  list, as the paper's order places an LLM rejection, so that "rejected" means one thing in both
  orders (and in the report's table, where the rejected rows close the list with their reasons).

``paired_precision`` compares the HyGRAIL list with the GNN's at each K on the same answers: the
difference of precision@K is (answers that entered the top K - answers that left it) / K exactly.

To Science4Cast's standard (Krenn et al., Nature Machine Intelligence 2023: ROC-AUC over every
unconnected pair, at horizons of 1, 3 and 5 years, for pairs whose ends have degree >= 0, 5 or 25
at the cutoff, links of >= 1 or >= 3 papers), every ranking is scored over a grid of conditions
(``retrospective``, long format: one row per method and condition):

- horizon h (``discover.horizons``): the answers are the future edges dated <= cutoff + h; a pair
  linked later is a non-answer at that horizon, as in Science4Cast. A horizon past the KG's last
  dated edge sees no more answers than the last year does (``n_answers`` says so).
- minimum degree d (``discover.min_degrees``): candidates and answers are restricted to the pairs
  whose two ends both have degree >= d in the graph known at the cutoff (every edge type): d = 0 is
  the whole space; d = 25 asks how a ranking does among well-studied entities, where degree alone
  says least.
- minimum count c (``discover.min_counts``, only where the KG has counts, i.e. some edge of the
  relation has a count > 1): an answer needs >= c supporting references (recipes, papers); future
  edges with fewer are non-answers. Known limitation: the count is the edge's count in the full KG
  (the final release), not the count reached within the horizon, which the KG files do not date.

Per condition: ROC-AUC and AP (exactly sklearn's, from tie groups: ``retrospective``) of the ranking's score vector over
the restricted candidates (HyGRAIL's score is its list position, reversed), precision@K and
recall@K of its list restricted to them, and the number of answers. The headline row
(``HEADLINE``: 3 years, every degree, >= 1 reference) is what MLflow and the figure show; the
headline's precision@K per degree-product bucket (``bucket_table``) says whether a ranking finds
anything beyond the hubs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from hygrail.discovery import KS
from hygrail.discovery.space import tiebreak
from hygrail.kg import NO_YEAR, KG, DataError, Relation

# The headline condition (horizon in years, minimum degree, minimum count): Science4Cast's middle
# horizon, the whole space, any supported link. Where a grid lacks one, its nearest value is used.
HEADLINE = (3, 0, 1)


def check_cutoff(kg: KG, relation: Relation, cutoff: int) -> None:
    """One-line errors for a cutoff that cannot give a retrospective evaluation."""
    years = kg.edges["year"].to_numpy()
    dated = years[years != NO_YEAR]
    if len(dated) == 0:
        raise DataError(f"discover.cutoff={cutoff}: this KG has no edge years (every year is unknown); "
                        f"a retrospective cutoff needs dated edges (set discover.cutoff=null)")
    if cutoff < dated.min():
        raise DataError(f"discover.cutoff={cutoff} is before the first dated edge ({dated.min()}): the graph "
                        f"known by then is empty; expected a year in {dated.min()}..{dated.max() - 1}")
    rel_years = kg.relation_edges(relation)["year"].to_numpy()
    if not (rel_years > cutoff).any():
        last = rel_years[rel_years != NO_YEAR].max() if (rel_years != NO_YEAR).any() else "none"
        raise DataError(f"discover.cutoff={cutoff}: no {relation.label} edge is dated after it (last: {last}), "
                        f"so there is nothing to find; expected a year before {last}")


@dataclass(frozen=True)
class Future:
    """The relation's edges first dated after the cutoff, as candidates of the cutoff graph."""

    src: np.ndarray  # reachable ones: both ends known by the cutoff
    dst: np.ndarray
    year: np.ndarray
    count: np.ndarray  # supporting references in the full KG (its final release, not as of the horizon)
    unreachable: int  # an end first appears after the cutoff: no method can propose them
    implied: int = 0  # implied at the cutoff by the ontology (not candidates)
    undated: int = 0  # observed edges of unknown date between known nodes: masked, neither answers nor misses
    # New entities: a source not yet known at the cutoff, to a known destination: described there by
    # static edges (a target first made later, known by its composition: He et al.'s unseen targets) or
    # by its name alone (a disease first annotated later): the per-entity task's cold-start row, where
    # the entity is given; not in the whole space.
    new_src: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    new_dst: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    new_year: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def new_within(self, cutoff: int, horizon: int) -> np.ndarray:
        """Per new-entity edge: whether its source was first linked within ``horizon`` years of the
        cutoff (its earliest edge here) and the edge itself falls within them: the cold-start task as
        a user meets it (issue #45; the other new edges are the any-year row)."""
        if not len(self.new_src):
            return np.zeros(0, dtype=bool)
        sources, inverse = np.unique(self.new_src, return_inverse=True)
        first = np.full(len(sources), np.iinfo(np.int64).max)
        np.minimum.at(first, inverse, self.new_year)
        return (first[inverse] <= cutoff + horizon) & (self.new_year <= cutoff + horizon)


def future_edges(kg: KG, known: KG, relation: Relation, cutoff: int) -> Future:
    edges = kg.relation_edges(relation)
    later = edges.filter(edges["year"] > cutoff)
    src, dst = later["src"].to_numpy(), later["dst"].to_numpy()
    reach = known.known[src] & known.known[dst]
    implied = reach & known.excluded(src, dst)
    ok = reach & ~implied
    undated = edges.filter(edges["year"] == NO_YEAR)
    n_undated = int((known.known[undated["src"].to_numpy()] & known.known[undated["dst"].to_numpy()]).sum())
    new = ~known.known[src] & known.known[dst]
    return Future(src[ok], dst[ok], later["year"].to_numpy()[ok], later["count"].to_numpy()[ok], int((~reach).sum()),
                  int(implied.sum()), n_undated, src[new], dst[new], later["year"].to_numpy()[new])


def future_of(src: np.ndarray, dst: np.ndarray, future: Future, n_nodes: int, same_type: bool) -> tuple[np.ndarray, np.ndarray]:
    """(year, count) of the future edge (src[i], dst[i]) (same-type pairs in either order); 0, 0
    where the pair is no future edge."""
    def key(s, d):
        s, d = np.asarray(s, dtype=np.int64), np.asarray(d, dtype=np.int64)
        if same_type:
            s, d = np.minimum(s, d), np.maximum(s, d)
        return s * n_nodes + d

    zeros = np.zeros(len(src), dtype=np.int64)
    if len(future.src) == 0:
        return zeros, zeros.copy()
    fk = key(future.src, future.dst)
    order = np.argsort(fk)
    fk = fk[order]
    ck = key(src, dst)
    at = np.minimum(np.searchsorted(fk, ck), len(fk) - 1)
    hit = fk[at] == ck
    return (np.where(hit, np.asarray(future.year, dtype=np.int64)[order][at], 0),
            np.where(hit, np.asarray(future.count, dtype=np.int64)[order][at], 0))


def ranking_metrics(hits: np.ndarray, n_future: int, ks=KS) -> dict[str, float]:
    """precision@K, recall@K and average precision of a ranked list (``hits[i]``: the i-th
    candidate is a future edge); recall and AP over all ``n_future`` reachable future edges."""
    hits = np.asarray(hits, dtype=np.int64)
    found = np.cumsum(hits)
    out = {}
    for k in ks:
        top = int(found[min(k, len(hits)) - 1]) if len(hits) else 0
        out[f"precision_at_{k}"] = top / k
        out[f"recall_at_{k}"] = top / n_future if n_future else 0.0
    where = np.flatnonzero(hits) + 1
    out["average_precision"] = float(np.sum(np.arange(1, len(where) + 1) / where) / n_future) if n_future else 0.0
    return out


def hygrail_order(gnn_order: np.ndarray, auto_accept: np.ndarray, llm_yes: np.ndarray, llm_no: np.ndarray,
                  confidence: np.ndarray) -> np.ndarray:
    """The HyGRAIL ranking (module docstring) as positions into the candidate arrays.

    ``gnn_order``: the GNN ranking; boolean masks over the candidates: ``auto_accept`` (above b*),
    ``llm_yes`` / ``llm_no`` (reviewed and accepted / rejected by HyGRAIL's decision rule);
    ``confidence``: the reviewer's confidence where ``llm_yes``."""
    group = np.full(len(auto_accept), 2, dtype=np.int8)
    group[llm_no] = 3
    group[llm_yes] = 1
    group[auto_accept] = 0
    position = np.empty(len(gnn_order), dtype=np.int64)
    position[gnn_order] = np.arange(len(gnn_order))
    conf = np.where(llm_yes, -np.nan_to_num(np.asarray(confidence, dtype=np.float64), nan=0.0), 0.0)
    return np.lexsort((position, conf, group))


def reviewed_order(gnn_order: np.ndarray, reviewed: np.ndarray, accepted: np.ndarray,
                   priority: np.ndarray) -> np.ndarray:
    """The ``discover.order=reviewed`` ranking (module docstring) as positions into the candidate arrays.

    ``gnn_order``: the GNN ranking; boolean masks over the candidates: ``reviewed`` (the head of
    the GNN's list the LLM reviewed), ``accepted`` (of those, the ones the decision rule accepts;
    read only where ``reviewed``); ``priority``: where reviewed and accepted, what orders them (the
    combined probability, or the reviewer's confidence; NaN counts as 0). Ties keep GNN order.
    Groups: 0 reviewed and accepted (by priority), 1 unreviewed (GNN order), 2 reviewed and
    rejected (GNN order)."""
    reviewed = np.asarray(reviewed, dtype=bool)
    yes = reviewed & np.asarray(accepted, dtype=bool)
    group = np.where(reviewed, np.where(yes, 0, 2), 1).astype(np.int8)
    position = np.empty(len(gnn_order), dtype=np.int64)
    position[gnn_order] = np.arange(len(gnn_order))
    key = np.where(yes, -np.nan_to_num(np.asarray(priority, dtype=np.float64), nan=0.0), 0.0)
    return np.lexsort((position, key, group))


def review_moves(gnn_rank: np.ndarray, demoted: np.ndarray) -> tuple[int, int, int]:
    """What the review did to a list, read from the list itself (rows in the list's order):
    ``gnn_rank``: each row's GNN rank; ``demoted``: the rows the LLM rejected (reviewed and not
    accepted). Returns (demoted, re-ordered, first differing position, 1-based; 0: identical).

    A rejected row counts as demoted when some row the GNN ranked below it is listed above it.
    Re-ordered: among the other rows, those whose position differs from their position in GNN
    order; a demotion alone shifts the rows under it by one but re-orders none of them."""
    gnn_rank, demoted = np.asarray(gnn_rank, dtype=np.int64), np.asarray(demoted, dtype=bool)
    prefix_max = np.maximum.accumulate(gnn_rank) if len(gnn_rank) else gnn_rank
    above = np.concatenate([[np.iinfo(np.int64).min], prefix_max[:-1]])[: len(gnn_rank)]  # largest GNN rank listed above
    n_demoted = int((demoted & (above > gnn_rank)).sum())
    rest = gnn_rank[~demoted]
    n_reordered = int((rest != np.sort(rest)).sum())
    differ = np.flatnonzero(gnn_rank != np.sort(gnn_rank))
    return n_demoted, n_reordered, int(differ[0]) + 1 if len(differ) else 0


def paired_precision(order: np.ndarray, gnn_order: np.ndarray, labels: np.ndarray, ks) -> pl.DataFrame:
    """HyGRAIL's list (``order``) against the GNN's (``gnn_order``) on the same ``labels`` (answers),
    one row per K of ``ks``: both precisions@K, their difference, how many candidates entered
    HyGRAIL's top K that the GNN's lacks (``entered``; as many left it) and how many answers
    each set holds (``gained``, ``lost``): difference = (gained - lost) / K exactly."""
    labels = np.asarray(labels, dtype=np.int64)
    rows = []
    for k in sorted({int(k) for k in ks}):
        mine, theirs = np.zeros(len(labels), bool), np.zeros(len(labels), bool)
        mine[order[:k]], theirs[gnn_order[:k]] = True, True
        entered, left = mine & ~theirs, theirs & ~mine
        p_h, p_g = labels[mine].sum() / k, labels[theirs].sum() / k
        rows.append({"K": k, "GNN": float(p_g), "HyGRAIL": float(p_h), "HyGRAIL - GNN": float(p_h - p_g),
                     "entered": int(entered.sum()), "gained": int(labels[entered].sum()),
                     "lost": int(labels[left].sum())})
    return pl.DataFrame(rows, schema={"K": pl.Int64, "GNN": pl.Float64, "HyGRAIL": pl.Float64,
                                      "HyGRAIL - GNN": pl.Float64, "entered": pl.Int64, "gained": pl.Int64,
                                      "lost": pl.Int64})


@dataclass(frozen=True)
class Retrospective:
    """The retrospective evaluation of one discovery (module docstring)."""

    table: pl.DataFrame  # one row per (method, horizon, min_degree, min_count)
    buckets: pl.DataFrame  # the headline condition, per degree-product bucket
    headline: tuple[int, int, int]  # (horizon, min_degree, min_count) of the headline rows
    paired: pl.DataFrame | None = None  # HyGRAIL against the GNN at each K, headline answers (``paired_precision``)
    order: str = "paper"  # the HyGRAIL list scored (``ORDERS``)
    heads: dict = field(default_factory=dict)  # method -> its first positions at the headline (``keep_head``)
    curves: dict = field(default_factory=dict)  # method -> precision@k, k = 1..max(ks), at the headline
    # method -> each answer's place in its list at the headline, as a fraction (0 = first, ties at their
    # group's middle; NaN: not a headline answer), in the order of the answers given: its mean over the
    # answers is 1 - AUC up to the answers' order among themselves, so a subset's mean says where a method
    # loses AUC (``rankings.answers_table``)
    places: dict = field(default_factory=dict)
    answers: pl.DataFrame | None = None  # one row per answer with its ``places`` (``rankings.answers_table``)
    margins: pl.DataFrame | None = None  # each method against the best other ranking, paired (``margins``)

    def headline_rows(self) -> pl.DataFrame:
        h, d, c = self.headline
        return self.table.filter((pl.col("horizon") == h) & (pl.col("min_degree") == d) & (pl.col("min_count") == c))


def margins(rows: pl.DataFrame, places: Mapping[str, np.ndarray], family: Mapping[str, str]) -> pl.DataFrame:
    """Each method of the headline ``rows`` (method, n_candidates, auc, ap) against the best ranking of
    another ``family`` (method -> family; a method's own variants, e.g. the stack's, or the GNN's
    HyGRAIL list and novelty views, are never its baseline), by AUC and by AP separately: the
    difference, exact from the table, and its standard error paired over the answers from each
    answer's place in both lists (``places``; NaN: not a headline answer). AUC: an answer's share of
    candidates ranked above it differs by d_i between the lists, and the AUC difference is mean(d_i)
    up to the answers' order among themselves; its SE std(d_i) / sqrt(n) is DeLong's variance over the
    positives, the part over the negatives (tens of millions) being negligible. AP: an answer's
    precision at its place (answers at or above it / its position) differs by e_i, AP = mean over the
    answers; SE std(e_i) / sqrt(n) treats the answers' terms as independent (an approximation; a term
    also moves when another answer passes it). ``ap_gain``: the relative difference, its SE that of
    the difference over the baseline's AP."""
    head = {r["method"]: r for r in rows.iter_rows(named=True)}
    out = []
    for m, r in head.items():
        others = [o for o in head if family.get(o, o) != family.get(m, m) and o in places]
        if not others or m not in places:
            continue
        row = {"method": m}
        for metric in ("auc", "ap"):
            best = max(others, key=lambda o: head[o][metric])
            mine, theirs = places[m], places[best]
            ok = np.isfinite(mine) & np.isfinite(theirs)
            if metric == "auc":
                d = theirs[ok] - mine[ok]
            else:
                d = _precision_at_place(mine[ok], r["n_candidates"]) - _precision_at_place(theirs[ok], r["n_candidates"])
            se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
            diff = float(r[metric] - head[best][metric])
            row |= {f"best_{metric}": best, f"{metric}": float(r[metric]), f"best_{metric}_value": float(head[best][metric]),
                    f"{metric}_margin": diff, f"{metric}_margin_se": se}
            if metric == "ap":
                base = float(head[best]["ap"])
                row |= {"ap_gain": diff / base if base > 0 else float("nan"),
                        "ap_gain_se": se / base if base > 0 else float("nan")}
        out.append(row)
    return pl.DataFrame(out)


def _precision_at_place(place: np.ndarray, n: int) -> np.ndarray:
    """Each answer's precision at its place (``Retrospective.places``: a fraction of ``n``): the
    answers at or above it over its 1-based position (tied answers by their places' order)."""
    pos = place * n
    order = np.argsort(pos, kind="stable")
    above = np.empty(len(pos))
    above[order] = np.arange(1, len(pos) + 1)
    return above / (pos + 1)


def headline(horizons: Sequence[int], min_degrees: Sequence[int], min_counts: Sequence[int]) -> tuple[int, int, int]:
    """``HEADLINE``, each part replaced by the grid's nearest value (the smaller on a tie)."""
    return tuple(min(grid, key=lambda v, want=want: (abs(v - want), v))
                 for grid, want in zip((horizons, min_degrees, min_counts), HEADLINE))


def answers(year: np.ndarray, count: np.ndarray, cutoff: int, horizon: int, min_count: int) -> np.ndarray:
    """1 where a candidate is an answer at ``horizon`` years with >= ``min_count`` references
    (``year``, ``count``: ``future_of``)."""
    return ((year > 0) & (year <= cutoff + horizon) & (count >= min_count)).astype(np.int8)


def degree_mask(degree: np.ndarray, src: np.ndarray, dst: np.ndarray, min_degree: int) -> np.ndarray:
    """Candidates whose two ends both have degree >= ``min_degree`` (``degree``: the cutoff graph's)."""
    return (degree[src] >= min_degree) & (degree[dst] >= min_degree)


def retrospective(scores: Mapping[str, np.ndarray | Callable[[], np.ndarray]], src: np.ndarray, dst: np.ndarray,
                  year: np.ndarray, count: np.ndarray, degree: np.ndarray, cutoff: int,
                  grid: Mapping[str, Sequence[int]], ks: Sequence[int] = KS, seed: int = 0, n_buckets: int = 4,
                  keep_head: int = 0, tap: Callable[[str, np.ndarray], None] | None = None) -> Retrospective:
    """Every ranking (``scores``: method -> score per candidate, higher first, ties by
    ``space.tiebreak``; or a function computing it, called once, so that one method's scores are
    in memory at a time) under every condition of ``grid`` (horizons, min_degrees, min_counts);
    ``year``, ``count``: ``future_of`` (full per-candidate arrays, or with ``year`` a tuple
    (positions, years, counts) of the answers only); ``degree``: per node, in the graph known at
    the cutoff; ``keep_head``: also keep each method's first ``keep_head`` positions at the
    headline condition (``Retrospective.heads``, for ``paired_precision``); ``tap``: called with each
    method's name and score vector while it is in memory (``entities.RowHits``: the per-entity rows).

    Exact over every candidate and within memory at whole-graph size (HPO: 5.7e7 candidates): one
    sort per method (``_sorted_keys``: its tie groups over the candidates' ranks in the tiebreak's
    order), then each condition's ROC-AUC (Mann-Whitney, ties counted half) and AP (sklearn's: one
    threshold per distinct score) from the answers' positions and their tie groups, in
    O(answers log candidates) each; ``tests/test_discover_eval.py`` checks both against sklearn. Held
    throughout: ~12 B per candidate on HPO (pairs as uint16, the tie order as int32, the smaller degree
    as uint16, the bucket and the answer flag a byte each); per method, beside its scores, 8 B of keys
    at its sort, then the keys turned tie groups and 4 B of list. These are counted from the arrays;
    measured peaks of whole cells are in experiments/discovery.md."""
    horizons, min_degrees, min_counts = grid["horizons"], grid["min_degrees"], grid["min_counts"]
    src, dst = np.asarray(src), np.asarray(dst)
    n = len(src)
    if isinstance(year, tuple):
        a_pos, a_year, a_count = (np.asarray(x, dtype=np.int64) for x in year)
    else:
        a_pos = np.flatnonzero(np.asarray(year) > 0)
        a_year, a_count = np.asarray(year, dtype=np.int64)[a_pos], np.asarray(count, dtype=np.int64)[a_pos]
    is_answer = np.zeros(n, dtype=bool)
    is_answer[a_pos] = True
    sorted_pos = np.argsort(a_pos)
    index = np.int32 if n < 2**31 else np.int64  # positions: half the memory of numpy's int64 at 5.7e7 candidates
    # per-candidate arrays are filled by chunks: an expression over all 5.7e7 at once holds several
    # 8-byte temporaries (the tiebreak's hash steps, degree lookups), ~2 GB on HPO
    tie_order = np.argsort(_chunked(n, np.uint64, lambda i: tiebreak(src[i], dst[i], seed)), kind="stable").astype(index)
    head = headline(horizons, min_degrees, min_counts)
    degree = np.asarray(degree)
    # the degree filters read only the smaller end's degree, clipped where the largest filter allows
    # 2 bytes (every ">= d" answers the same; 2 B a candidate less than int32, counted, not measured apart)
    cap = np.iinfo(np.uint16).max
    if max(min_degrees, default=0) < cap:
        min_deg = _chunked(n, np.uint16, lambda i: np.minimum(np.minimum(degree[src[i]], degree[dst[i]]), cap))
    else:
        min_deg = _chunked(n, np.int64, lambda i: np.minimum(degree[src[i]], degree[dst[i]]))

    def product_of(i):
        return degree[src[i]].astype(np.float64) * degree[dst[i]]

    # exact in 4 bytes when every product fits (the product and its copy for the quantiles: 8 B a
    # candidate instead of 16, counted); float64 otherwise
    top_deg = float(degree.max()) if len(degree) else 0.0
    small = np.issubdtype(degree.dtype, np.integer) and top_deg * top_deg < 2**32
    product = _chunked(n, np.uint32 if small else np.float64, product_of)
    values = product if head[1] <= 0 else product[min_deg >= head[1]]
    values = values.copy() if values is product else values  # np.quantile may reorder it
    edges = np.unique(np.quantile(values, np.arange(1, n_buckets) / n_buckets, overwrite_input=True)) \
        if len(values) else np.zeros(0)
    del values
    # edges[b-1] < product <= edges[b]
    bucket = _chunked(n, np.int8, lambda i: np.searchsorted(edges, product[i], side="left"))
    # each bucket's product range among the headline's candidates: the same for every list, read once
    # (per list it held ~8 B a candidate of degree lookups, at the evaluation's peak)
    ranges = _ranges(product, bucket, len(edges) + 1, None if head[1] <= 0 else (lambda i: min_deg[i] >= head[1]))
    del product
    labels_for = {(h, c): (a_year <= cutoff + h) & (a_count >= c) for h in horizons for c in min_counts}
    rows, bucket_rows, heads, curves, places = [], [], {}, {}, {}
    top = max(ks)
    for name, given in scores.items():
        s = np.asarray(given() if callable(given) else given)
        # float32 scores stay float32 (a float64 copy is 8 B a candidate more); other kinds compare as float64
        s = s if s.dtype.kind == "f" else s.astype(np.float64)
        if len(s) != n:
            raise ValueError(f"retrospective: {name} has {len(s)} scores for {n} candidates")
        if np.isnan(s).any():
            raise ValueError(f"retrospective: {name} has NaN scores; a ranking needs every candidate scored")
        if tap is not None:
            tap(name, s)
        key = _sorted_keys(s, tie_order)
        del s  # from here the list lives in its keys only: a lazily computed method's array is freed
        order = _chunked(n, tie_order.dtype, lambda i: tie_order[(key[i] & _LOW).astype(np.intp)])
        key >>= np.uint64(32)  # in place: each list position's tie group, ascending
        groups = key  # each answer's tie group found by two binary searches
        del key
        head_ranks = None
        for d in min_degrees:
            keep = None if d <= 0 else min_deg[order] >= d  # per list position
            od, grp = (order, groups) if keep is None else (order[keep], groups[keep])
            ranks = np.flatnonzero(is_answer[od])  # positions of the answers in this list, ascending
            which = sorted_pos[np.searchsorted(a_pos[sorted_pos], od[ranks])]  # the answer at each
            # the tie group [start, end) of each answer, not of every candidate: all groups' bounds are
            # 3 int64 arrays of the list's length for continuous scores (24 B a candidate, counted)
            starts = np.searchsorted(grp, grp[ranks], side="left")
            ends = np.searchsorted(grp, grp[ranks], side="right")
            del grp
            for h in horizons:
                for c in min_counts:
                    m = labels_for[(h, c)][which]
                    r = ranks[m]
                    rows.append({"method": name, "horizon": h, "min_degree": d, "min_count": c,
                                 "n_candidates": len(od), "n_answers": len(r)}
                                | _auc_ap(r, starts[m], ends[m], len(od)) | _at_k(r, len(r), ks))
                    if (h, d, c) == head:
                        curves[name] = np.cumsum(np.bincount(r[r < top], minlength=top)[:top]) / np.arange(1, top + 1)
                        places[name] = np.full(len(a_pos), np.nan)
                        places[name][which[m]] = (starts[m] + ends[m] - 1) / 2 / len(od)
                        if keep_head:
                            heads[name] = od[:keep_head].copy()
                        head_ranks = r
            del od, starts, ends
        del groups  # before the buckets: 8 B a candidate less at the peak
        if head_ranks is not None:
            od = order if head[1] <= 0 else order[min_deg[order] >= head[1]]
            bucket_rows += _buckets(name, od, head_ranks, bucket, ranges, ks)
            del od
        del order
    return Retrospective(pl.DataFrame(rows), pl.DataFrame(bucket_rows), head, heads=heads, curves=curves, places=places)


_LOW = np.uint64(0xFFFFFFFF)


def _sorted_keys(s: np.ndarray, tie_order: np.ndarray) -> np.ndarray:
    """The list of scores ``s`` as one sorted uint64 per position: its tie group above (ascending with
    descending score; equal exactly where the scores tie) and its rank in ``tie_order`` below, which
    orders equal scores.

    One in-place sort of keys built from the float32 order-preserving bits of -score: 8 B a candidate,
    where numpy's stable argsort held ~12 B more (its int64 index and a merge buffer). Where a float32
    cannot hold every score (the trees', TSH's float64), the groups of equal float32 are re-sorted by
    the exact score, a few million keys at a time, and the groups become ranks. 57 M random scores to
    their list and tie groups, against the argsort: 2.2-2.4x faster (``bench/bench_sort_keys.py``)."""
    n, chunk = len(s), 1 << 22
    if n >= 2**32:
        raise ValueError(f"retrospective: {n:,} candidates; a list's keys hold a position in 32 bits")
    key = np.empty(n, dtype=np.uint64)
    for lo in range(0, n, chunk):
        # -score as float32 (+0.0 folds -0.0 into 0.0: equal as floats), its bits flipped into the floats' order
        u = (np.negative(s[tie_order[lo:lo + chunk]], dtype=np.float32) + np.float32(0)).view(np.uint32)
        u = np.where(u >> np.uint32(31), ~u, u | np.uint32(1 << 31))
        key[lo:lo + chunk] = (u.astype(np.uint64) << np.uint64(32)) | np.arange(lo, lo + len(u), dtype=np.uint64)
    key.sort()
    if s.dtype == np.float32 or all(np.array_equal(s[i:i + chunk].astype(np.float32), s[i:i + chunk])
                                    for i in range(0, n, chunk)):
        return key  # float32 equality is the scores' equality
    lo, group = 0, 0
    while lo < n:  # spans of whole float32 groups: each sorted by the exact score, stable in tie order
        last = key[min(lo + chunk, n) - 1] >> np.uint64(32)
        hi = lo + int(np.searchsorted(key[lo:], (last + np.uint64(1)) << np.uint64(32))) if last < _LOW else n
        j = key[lo:hi] & _LOW
        v = -s[tie_order[j.astype(np.intp)]].astype(np.float64)
        by = np.argsort(v, kind="stable")
        j, v = j[by], v[by]
        rank = group + np.cumsum(np.r_[lo > 0, v[1:] != v[:-1]], dtype=np.uint64)
        key[lo:hi] = (rank << np.uint64(32)) | j
        group, lo = int(rank[-1]), hi
    return key


def _chunked(n: int, dtype, fn: Callable[[slice], np.ndarray], chunk: int = 1 << 22) -> np.ndarray:
    """An n-array of ``dtype`` filled as ``fn(slice)`` chunk by chunk (bounded temporaries)."""
    out = np.empty(n, dtype=dtype)
    for lo in range(0, n, chunk):
        out[lo:lo + chunk] = fn(slice(lo, lo + chunk))
    return out


def _auc_ap(ranks: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int) -> dict[str, float]:
    """Exact ROC-AUC and AP of a sorted list whose answers sit at ``ranks`` (ascending), the answer
    at ``ranks[i]`` in the group of equal scores [starts[i], ends[i]); NaN when one class is missing."""
    p = len(ranks)
    if p == 0 or p == n:
        return {"auc": float("nan"), "ap": float("nan")}
    start, first, pos_g = np.unique(starts, return_index=True, return_counts=True)
    end = ends[first]
    size = end - start
    cum_pos = np.cumsum(pos_g)
    neg_below = (n - p) - (end - cum_pos)  # negatives scored strictly lower than the group
    auc = float(np.sum(pos_g * (neg_below + 0.5 * (size - pos_g))) / (p * (n - p)))
    ap = float(np.sum(pos_g / p * cum_pos / end))
    return {"auc": auc, "ap": ap}


def _at_k(ranks: np.ndarray, n_future: int, ks: Sequence[int]) -> dict[str, float]:
    """precision@K and recall@K of a list whose answers sit at ``ranks`` (0-based, ascending)."""
    out = {}
    for k in ks:
        found = int(np.searchsorted(ranks, k))
        out[f"precision_at_{k}"] = found / k
        out[f"recall_at_{k}"] = found / n_future if n_future else 0.0
    return out


def bucket_table(orders: Mapping[str, np.ndarray], labels: np.ndarray, degree_product: np.ndarray, n_buckets: int,
                 ks: Sequence[int] = KS, keep: np.ndarray | None = None) -> pl.DataFrame:
    """Each ranking within each bucket of the degree product d(u) d(v) (``n_buckets`` quantile
    buckets of the candidates in ``keep``; tied quantiles merge buckets): its list restricted to
    the bucket (precision@K, recall@K), and how much of its top max(K) over all candidates lies in
    the bucket (``in_top``) with how many answers there (``hits_in_top``). A ranking whose top is all
    in the last bucket finds only pairs of hubs. (``retrospective`` computes the same rows list by list.)"""
    keep = np.ones(len(labels), dtype=bool) if keep is None else keep
    edges = np.unique(np.quantile(degree_product[keep], np.arange(1, n_buckets) / n_buckets)) if keep.any() else []
    bucket = np.searchsorted(edges, degree_product, side="left")
    ranges = _ranges(np.asarray(degree_product), bucket, len(edges) + 1, lambda i: keep[i])
    rows = []
    for name, order in orders.items():
        order = order[keep[order]]
        rows += _buckets(name, order, np.flatnonzero(labels[order]), bucket, ranges, ks)
    return pl.DataFrame(rows)


def _ranges(product: np.ndarray, bucket: np.ndarray, n_buckets: int,
            keep: Callable[[slice], np.ndarray] | None) -> list[str]:
    """Each bucket's degree-product range "min-max" over the candidates ``keep`` selects (a
    chunk's mask; None: all), read chunk by chunk."""
    lo, hi = np.full(n_buckets, np.inf), np.full(n_buckets, -np.inf)
    for at in range(0, len(product), 1 << 22):
        i = slice(at, at + (1 << 22))
        p, b = product[i].astype(np.float64), bucket[i]
        if keep is not None:
            m = keep(i)
            p, b = p[m], b[m]
        for k in np.unique(b):
            pk = p[b == k]
            lo[k], hi[k] = min(lo[k], pk.min()), max(hi[k], pk.max())
    return [f"{a:g}-{z:g}" for a, z in zip(lo, hi)]


def _buckets(name: str, od: np.ndarray, ranks: np.ndarray, bucket: np.ndarray, ranges: Sequence[str],
             ks: Sequence[int]) -> list[dict]:
    """``bucket_table``'s rows for one list (``od``: candidate positions in list order; answers at
    ``ranks``; ``ranges``: each bucket's degree-product range, ``_ranges``)."""
    top = max(ks)
    b_sorted = bucket[od]
    rows = []
    for b in range(len(ranges)):
        members = np.flatnonzero(b_sorted == b)
        if not len(members):
            continue
        mine = ranks[b_sorted[ranks] == b]
        within = np.searchsorted(members, mine)  # each answer's position in the bucket's own list
        rows.append({"method": name, "bucket": b + 1, "degree_product": ranges[b],
                     "n_candidates": len(members), "n_answers": len(mine),
                     f"in_top_{top}": int(np.searchsorted(members, top)), f"hits_in_top_{top}": int(np.searchsorted(mine, top))}
                    | _at_k(within, len(mine), ks))
    return rows
