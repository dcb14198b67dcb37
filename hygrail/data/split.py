"""Paper §4 "Data splits" and App. A.2: temporal 7:1:2 split with 1:20 sampled negatives.

For one hypothesis relation r: the observed r-edges are the positives, sorted by year (ties broken
by a seeded shuffle) and cut 7:1:2 into train/val/test. Each split gets ``neg_ratio`` negatives per
positive, sampled uniformly from unlinked (src-type, dst-type) pairs: never an observed edge of
the whole KG and disjoint across splits. Validation and test positives are removed from the
message-passing graph (the edge is undirected, so both directions go at once).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from hygrail.kg import KG, DataError, Relation

SPLITS = ("train", "val", "test")


@dataclass
class Split:
    """Labelled hypotheses of one relation plus the leak-free training graph.

    ``pairs``: split ("train"/"val"/"test"), src, dst (node ids of the full KG, oriented as the
    relation), label (1 observed, 0 sampled), year (positives only; -1 for negatives).
    """

    relation: Relation
    pairs: pl.DataFrame
    train_graph: KG

    def part(self, name: str) -> pl.DataFrame:
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return self.pairs.filter(pl.col("split") == name)

    def counts(self) -> dict[str, dict[str, int]]:
        """{split: {"pos": n, "neg": n}} as in paper Table 6."""
        out = {}
        for name in SPLITS:
            part = self.part(name)
            pos = int(part["label"].sum())
            out[name] = {"pos": pos, "neg": part.height - pos}
        return out


def split_sizes(n: int, ratios: tuple[float, float, float]) -> tuple[int, int, int]:
    """Positive counts per split; val and test are rounded, train takes the rest."""
    total = sum(ratios)
    n_val = int(np.floor(n * ratios[1] / total + 0.5))
    n_test = int(np.floor(n * ratios[2] / total + 0.5))
    return n - n_val - n_test, n_val, n_test


def temporal_split(
    kg: KG,
    relation: Relation,
    ratios: tuple[float, float, float] = (7, 1, 2),
    neg_ratio: int = 20,
    seed: int = 42,
) -> Split:
    rng = np.random.default_rng(seed)
    pos = kg.relation_edges(relation)
    sizes = split_sizes(pos.height, ratios)
    if min(sizes) < 1:
        raise DataError(
            f"relation {relation.name} ({relation.label}) has {pos.height} edges: a {':'.join(f'{r:g}' for r in ratios)} "
            f"split gives train/val/test {'/'.join(map(str, sizes))} positives; every part needs at least 1"
        )
    # Seeded tie-break among equal years keeps the split deterministic without favouring ids.
    pos = pos.with_columns(pl.Series("tie", rng.permutation(pos.height))).sort(["year", "tie"])
    pos = pos.with_columns(pl.Series("split", np.repeat(SPLITS, sizes)), pl.lit(1, pl.Int8).alias("label"))

    src_pool, dst_pool = kg.nodes_of_type(relation.src), kg.nodes_of_type(relation.dst)
    n_neg = [neg_ratio * k for k in sizes]
    neg_src, neg_dst = sample_unlinked(kg, src_pool, dst_pool, sum(n_neg), rng, relation, pos.height)
    neg_split = np.repeat(SPLITS, n_neg)
    neg = pl.DataFrame(
        {
            "split": neg_split,
            "src": neg_src,
            "dst": neg_dst,
            "label": np.zeros(len(neg_src), dtype=np.int8),
            "year": np.full(len(neg_src), -1, dtype=np.int32),
        }
    )
    pairs = pl.concat(
        [pos.select("split", "src", "dst", "label", pl.col("year").cast(pl.Int32)), neg], how="vertical_relaxed"
    )
    held_out = pos.filter(pl.col("split") != "train")["edge_id"].to_numpy()
    return Split(relation, pairs, kg.without_edges(held_out))


def sample_unlinked(
    kg: KG,
    src_pool: np.ndarray,
    dst_pool: np.ndarray,
    n: int,
    rng: np.random.Generator,
    relation: Relation,
    n_linked: int,
) -> tuple[np.ndarray, np.ndarray]:
    """n distinct (src, dst) pairs with no edge between them in ``kg`` (any split, any type);
    ``n_linked``: the relation's edge count."""
    # Every observed edge between these two node types is an edge of this relation.
    pairs = len(src_pool) * len(dst_pool) if relation.src != relation.dst else len(src_pool) * (len(src_pool) - 1) // 2
    capacity = pairs - n_linked
    if capacity < n:
        raise DataError(
            f"relation {relation.name}: {n} negatives requested but only {capacity} unlinked "
            f"{relation.label} pairs exist; lower neg_ratio"
        )
    seen: set[tuple[int, int]] = set()
    out_src, out_dst = [], []
    while len(out_src) < n:
        m = 2 * (n - len(out_src)) + 64
        s = src_pool[rng.integers(0, len(src_pool), m)]
        d = dst_pool[rng.integers(0, len(dst_pool), m)]
        ok = (s != d) & ~kg.has_edges(s, d)
        for a, b in zip(s[ok].tolist(), d[ok].tolist()):
            key = (a, b) if relation.src != relation.dst else (min(a, b), max(a, b))
            if key in seen:
                continue
            seen.add(key)
            out_src.append(a)
            out_dst.append(b)
            if len(out_src) == n:
                break
    return np.array(out_src, dtype=np.int64), np.array(out_dst, dtype=np.int64)

