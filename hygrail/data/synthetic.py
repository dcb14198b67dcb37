"""Calibrated synthetic MatKG: the embedded default dataset (paper App. A.1, Tables 4-5).

MatKG cannot be downloaded here, so the default run uses a graph with the paper subgraph's
statistics (nodes per type, hypothesis-relation edges, total edges, density, count floor) and a
planted structure a GNN can learn and an LLM can recognise:

- every non-hub entity carries a real materials-science name (``hygrail.data.vocab``) and belongs
  to one or two research topics (batteries, catalysis, photovoltaics, ...), and inside a topic to
  a niche of kindred names (neighbours in the topic's vocabulary list);
- a base graph gives every entity one *anchor* link into its niche, then draws links from four
  channels: *topic* (both ends in one topic or niche: the core literature), *bridge* (ends in two
  related topics), *hub* (one end a generic entity such as "Structure" or "XRD") and *noise* (any
  two entities); the rest of each edge type *closes* open wedges u - x - v of the base graph
  (Swanson's A-B-C discovery), which is what makes links predictable from shared neighbours;
- endpoints are drawn by a heavy-tailed popularity (canonical names more popular), so degrees and
  support counts are heavy-tailed, with the release's count floor;
- years: topic and hub links between popular entities are old; bridge, noise and closing links,
  and links of rarer entities, are recent, as discoveries are. The temporal split therefore tests
  on harder, more cross-topic links, and GNN scores have an ambiguous middle region.

``scale`` multiplies node counts; edge counts grow as ``scale ** densification`` (graphs densify as
they grow), so that scale ~23.3 gives the full release: ~70k nodes, ~2.7 M undirected edges.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

import numpy as np
import polars as pl
import scipy.sparse as sp

from hygrail.data import vocab
from hygrail.kg import KG, DataError, Schema

CHANNELS = ("topic", "bridge", "hub", "noise", "closure")
TOPIC, BRIDGE, HUB, NOISE, CLOSURE = range(len(CHANNELS))


@dataclass(frozen=True)
class Structure:
    """Knobs of the planted structure; defaults are the calibrated ones (bench/bench_data.py)."""

    p_topic: float = 0.50
    p_bridge: float = 0.12
    p_hub: float = 0.25
    p_noise: float = 0.13
    p_closure: float = 0.35  # share of each edge type that closes an open wedge u - x - v of the rest
    niches: int = 4  # each topic's lists are cut into this many niches of kindred names ...
    p_niche: float = 0.7  # ... and this share of topic links stays inside one niche
    popularity_sigma: float = 1.0  # lognormal spread of entity popularity
    rank_decay: float = 0.8  # popularity ~ (1 + rank/8)^-decay: a topic's flagship names are most studied
    derived_weight: float = 0.3  # derived names ("Nb-doped LiFePO4") are rarer than their base
    hub_boost: float = 25.0  # hub popularity relative to the mean entity of its type
    noise_power: float = 0.5  # noise endpoints ~ popularity^power: flatter than real links
    novelty_shift: tuple[float, ...] = (0.0, 1.2, -0.5, 1.0, 0.5)  # per channel (CHANNELS): later years
    novelty_popularity: float = 0.5  # links of rarer entities appear later
    novelty_noise: float = 1.0
    growth_rate: float = 0.12  # yearly growth of the literature: more first co-occurrences lately
    count_alpha: float = 1.2  # Pareto tail of support counts on topic/hub links
    noise_count_alpha: float = 2.5  # chance co-occurrences are rarely well supported
    max_count: float = 20000.0  # soft ceiling of support counts

    @classmethod
    def from_config(cls, cfg: Mapping | None) -> "Structure":
        cfg = dict(cfg or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(cfg) - known)
        if unknown:
            raise DataError(f"data.structure: unknown option(s) {unknown}; expected some of {sorted(known)}")
        if "novelty_shift" in cfg:
            cfg["novelty_shift"] = tuple(float(x) for x in cfg["novelty_shift"])
        s = cls(**cfg)
        probs = s.channel_probs
        if (probs < 0).any() or probs.sum() <= 0:
            raise DataError(
                f"data.structure: channel probabilities p_topic..p_noise must be >= 0, got {probs.tolist()}"
            )
        return s

    @property
    def channel_probs(self) -> np.ndarray:
        return np.array([self.p_topic, self.p_bridge, self.p_hub, self.p_noise], dtype=float)


@dataclass
class Planted:
    """The hidden structure behind a synthetic KG, for tests and benchmarks only (never a model input).

    ``topics``: (N, T) bool membership; ``topic_keys``: the T topics; ``niches``: (N, T * niches)
    bool, the niche of each of a node's topics; ``hub``: (N,) bool; ``popularity``: (N,) float;
    ``channel``: per edge of ``kg.edges`` (index into ``CHANNELS``).
    """

    topic_keys: tuple[str, ...]
    topics: np.ndarray
    niches: np.ndarray
    hub: np.ndarray
    popularity: np.ndarray
    channel: np.ndarray

    PAIR_STRUCTURE = ("share_topic", "shared_topics", "share_niche", "related_topics", "no_topic_src", "no_topic_dst")

    def share_topic(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (self.topics[np.asarray(u)] & self.topics[np.asarray(v)]).any(axis=1)

    def pair_structure(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(n, 6) float: what the topic and bridge channels draw pairs by (``PAIR_STRUCTURE``):
        a shared topic, how many, a shared niche, a topic of u related to one of v, and whether
        either end has no topic. bench_triage.py's tsh+planted row adds them to TSH's descriptors."""
        u, v = np.asarray(u), np.asarray(v)
        tu, tv = self.topics[u], self.topics[v]
        shared = (tu & tv).sum(axis=1)
        related = ((tu.astype(float) @ _related()) * tv).sum(axis=1) > 0
        niche = (self.niches[u] & self.niches[v]).any(axis=1)
        return np.c_[shared > 0, shared, niche, related, ~tu.any(axis=1), ~tv.any(axis=1)].astype(float)


def generate(schema: Schema, cfg: Mapping) -> KG:
    """The synthetic KG a ``conf/data/matkg_synthetic.yaml``-style config describes."""
    return generate_with_topics(schema, cfg)[0]


def generate_with_topics(schema: Schema, cfg: Mapping) -> tuple[KG, Planted]:
    rng = np.random.default_rng(int(cfg.get("seed", 0)))
    structure = Structure.from_config(cfg.get("structure"))
    scale = float(cfg.get("scale", 1.0))
    if not scale > 0:
        raise DataError(f"data.scale={scale}; expected a positive number")
    nodes = _nodes(schema, cfg, scale, structure, rng)
    targets = edge_targets(schema, cfg)
    years = tuple(int(y) for y in cfg.get("years", (1995, 2023)))
    min_count = int(cfg.get("min_count", 30))

    n_all = len(nodes.names)
    # Phase 1: the base graph, one anchor link per entity and the rest from the four channels;
    # phase 2: the remaining links of each type close open wedges of the base graph.
    budget: dict[str, int] = {}
    for etype, m in targets.items():
        a, b = etype.split("-")
        if m > (capacity := _capacity(nodes, a, b)):
            raise DataError(f"synthetic edge type {etype}: {m} edges requested but only {capacity} node pairs exist")
        budget[etype] = m - int(round(structure.p_closure * m))
    anchors = _anchors(nodes, budget, structure, rng)
    base: dict[str, tuple[np.ndarray, ...]] = {}
    for etype, m_base in budget.items():
        a, b = etype.split("-")
        ua, ub, ch = anchors[etype]
        fallback = _uniform_sampler(nodes, a, b, rng)
        draw = _channel_sampler(nodes, a, b, structure, rng, m_base, np.bincount(ch, minlength=len(CHANNELS)))
        more = _collect(draw, m_base - len(ua), ua * n_all + ub, n_all, a == b, fallback)
        base[etype] = tuple(np.concatenate([x, y]) for x, y in zip((ua, ub, ch), more))
    u0 = np.concatenate([e[0] for e in base.values()])
    v0 = np.concatenate([e[1] for e in base.values()])
    ends = (np.concatenate([u0, v0]), np.concatenate([v0, u0]))
    base_adj = sp.csr_matrix((np.ones(2 * len(u0)), ends), shape=(n_all, n_all))
    # Per node type, the base graph's links into that type (columns = positions in the type's ids).
    to_type = {t: base_adj[:, p.ids].tocsr() for t, p in nodes.by_type.items()}
    parts, names = [], []
    for etype, m in targets.items():
        a, b = etype.split("-")
        ua, ub, ch = base[etype]
        fallback = _uniform_sampler(nodes, a, b, rng)
        draw = _closure_sampler(nodes, a, b, base_adj, to_type, rng) or _channel_sampler(nodes, a, b, structure, rng)
        more = _collect(draw, m - len(ua), ua * n_all + ub, n_all, a == b, fallback)
        ua, ub, ch = (np.concatenate([x, y]) for x, y in zip((ua, ub, ch), more))
        year, count = _years_and_counts(nodes, ua, ub, ch, structure, years, min_count, rng)
        parts.append((ua, ub, np.full(m, len(names)), year, count, ch))
        names.append(etype)
    u, v, etype_idx, year, count, channel = (np.concatenate(x) for x in zip(*parts))
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    order = np.lexsort((hi, lo))  # edge ids in (u, v) order: nothing about how an edge was made
    edges = pl.DataFrame(
        {
            "u": lo[order],
            "v": hi[order],
            "type": pl.Series(names, dtype=pl.String).gather(etype_idx[order]),
            "count": count[order],
            "year": year[order].astype(np.int32),
        }
    )
    node_df = pl.DataFrame({"name": nodes.names, "type": nodes.type_names})
    kg = KG(schema, node_df, edges)
    planted = Planted(
        tuple(t.key for t in vocab.TOPICS), nodes.topics, nodes.niches, nodes.hub, nodes.weight,
        channel[order].astype(np.int8),
    )
    return kg, planted


# -- sizes -------------------------------------------------------------------------------------


def node_counts(schema: Schema, cfg: Mapping) -> dict[str, int]:
    nodes = cfg.get("nodes") or {}
    missing = [t for t in schema.node_types if t not in nodes]
    if missing:
        raise DataError(f"data.nodes: no count for node type(s) {missing}; expected one per schema node type")
    scale = float(cfg.get("scale", 1.0))
    return {t: max(1, round(int(nodes[t]) * scale)) for t in schema.node_types}


def edge_targets(schema: Schema, cfg: Mapping) -> dict[str, int]:
    """Edges per canonical edge type: hypothesis relations as configured, the rest shared by weight."""
    factor = float(cfg.get("scale", 1.0)) ** float(cfg.get("densification", 1.0))
    out: dict[str, int] = {}
    for name, m in (cfg.get("relation_edges") or {}).items():
        r = schema.relation(name)
        out[schema.edge_type(r.src, r.dst)] = round(int(m) * factor)
    if cfg.get("total_edges") is None:
        raise DataError("data.total_edges is missing; expected the KG's total number of undirected edges")
    total = round(int(cfg["total_edges"]) * factor)
    rest = total - sum(out.values())
    if rest < 0:
        raise DataError(f"data.total_edges={cfg['total_edges']} is below the sum of data.relation_edges")
    weights: dict[str, float] = {}
    for etype, w in (cfg.get("other_edges") or {}).items():
        try:
            canon = schema.canonical(str(etype))
        except ValueError:
            raise DataError(f"data.other_edges: {etype!r} is not a '<type>-<type>' of this schema") from None
        if canon in out:
            raise DataError(f"data.other_edges: {etype} is a hypothesis relation; set it in data.relation_edges")
        weights[canon] = float(w)
    if rest and not weights:
        raise DataError(f"data.other_edges is empty but {rest} edges remain to reach data.total_edges")
    keys = sorted(weights)
    share = np.array([weights[k] for k in keys]) * rest / sum(weights.values())
    alloc = np.floor(share).astype(int)
    # Largest remainders get the leftover edges, so the total is exact.
    alloc[np.argsort(-(share - alloc), kind="stable")[: rest - alloc.sum()]] += 1
    out.update({k: int(n) for k, n in zip(keys, alloc)})
    return out


# -- nodes -------------------------------------------------------------------------------------


@dataclass
class _Nodes:
    names: list[str]
    type_names: list[str]
    topics: np.ndarray  # (N, T) bool
    niches: np.ndarray  # (N, T * niches) bool
    hub: np.ndarray
    weight: np.ndarray  # popularity
    by_type: dict[str, "_Pools"]
    primary: np.ndarray  # (N,) first topic, -1 for none
    primary_niche: np.ndarray  # (N,) niche group of the first topic, -1 for none


@dataclass
class _Groups:
    """Popularity-weighted sampler of the nodes of one type inside each group (topic or niche)."""

    ids: np.ndarray  # node ids sorted by group (a node of two groups appears twice)
    cum: np.ndarray  # running weight over ids
    start: np.ndarray  # (G,) running weight before each group's block
    mass: np.ndarray  # (G,)

    @classmethod
    def build(cls, ids: np.ndarray, member: np.ndarray, w: np.ndarray) -> "_Groups":
        node, group = np.nonzero(member[ids])
        order = np.argsort(group, kind="stable")
        mass = np.bincount(group, weights=w[ids[node]], minlength=member.shape[1])
        sorted_ids = ids[node[order]]
        return cls(sorted_ids, np.cumsum(w[sorted_ids]), np.concatenate([[0.0], np.cumsum(mass)[:-1]]), mass)

    def draw(self, group: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        target = self.start[group] + rng.random(len(group)) * self.mass[group]
        return self.ids[np.minimum(np.searchsorted(self.cum, target, side="right"), len(self.ids) - 1)]


@dataclass
class _Pools:
    """Weighted samplers over the nodes of one type: all, noise-flattened, hubs, per topic, per niche."""

    ids: np.ndarray
    cum: np.ndarray
    noise_cum: np.ndarray
    hub_ids: np.ndarray
    hub_cum: np.ndarray
    topic: _Groups
    niche: _Groups


def _nodes(schema: Schema, cfg: Mapping, scale: float, s: Structure, rng: np.random.Generator) -> _Nodes:
    counts = node_counts(schema, cfg)
    n_topics = len(vocab.TOPICS)
    names, type_names, rows_topics, niche, hub, weight = [], [], [], [], [], []
    for t in schema.node_types:
        if t not in vocab.GENERIC:
            raise DataError(f"synthetic MatKG has no vocabulary for node type {t!r}; expected {list(vocab.TYPES)}")
        try:
            v = vocab.vocabulary(t, counts[t])
        except ValueError as e:
            raise DataError(f"data.scale={scale}: {e}") from None
        n = counts[t]
        rank = np.array(v.topic_rank, dtype=float)
        w = np.exp(s.popularity_sigma * rng.standard_normal(n)) * (1 + rank / 8) ** -s.rank_decay
        w[np.array(v.derived)] *= s.derived_weight
        hub_rank = np.array(v.hub_rank)
        is_hub = hub_rank >= 0
        if (~is_hub).any():
            w[is_hub] = s.hub_boost * w[~is_hub].mean() * (1 + hub_rank[is_hub]) ** -0.7
        names += v.names
        type_names += [t] * n
        rows_topics += v.topics
        niche.append(np.minimum((np.array(v.topic_position) * s.niches).astype(int), s.niches - 1))
        hub.append(is_hub)
        weight.append(w)
    n_all = len(names)
    perm = rng.permutation(n_all)  # node ids carry no type/topic order
    names = [names[i] for i in perm]
    type_names = [type_names[i] for i in perm]
    niche_arr = np.concatenate(niche)[perm]
    topics = np.zeros((n_all, n_topics), dtype=bool)
    niches = np.zeros((n_all, n_topics * s.niches), dtype=bool)
    for i, src in enumerate(perm):
        ts = list(rows_topics[src])
        topics[i, ts] = True
        niches[i, [t * s.niches + niche_arr[i] for t in ts]] = True
    hub_arr = np.concatenate(hub)[perm]
    w_arr = np.concatenate(weight)[perm]
    lookup = {t: i for i, t in enumerate(schema.node_types)}
    type_of = np.array([lookup[t] for t in type_names])
    by_type = {}
    for t, i in lookup.items():
        ids = np.flatnonzero(type_of == i)
        hub_ids = ids[hub_arr[ids]]
        by_type[t] = _Pools(
            ids,
            np.cumsum(w_arr[ids]),
            np.cumsum(w_arr[ids] ** s.noise_power),
            hub_ids,
            np.cumsum(w_arr[hub_ids]),
            _Groups.build(ids, topics, w_arr),
            _Groups.build(ids, niches, w_arr),
        )
    primary = np.array([rows_topics[src][0] if rows_topics[src] else -1 for src in perm])
    primary_niche = np.where(primary >= 0, primary * s.niches + niche_arr, -1)
    return _Nodes(names, type_names, topics, niches, hub_arr, w_arr, by_type, primary, primary_niche)


def _draw(ids: np.ndarray, cum: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    if k == 0:
        return ids[:0]
    return ids[np.minimum(np.searchsorted(cum, rng.random(k) * cum[-1], side="right"), len(ids) - 1)]


def _pick(weights: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k group indices drawn proportionally to ``weights``."""
    return np.searchsorted(np.cumsum(weights), rng.random(k) * weights.sum(), side="right").clip(0, len(weights) - 1)


def _related() -> np.ndarray:
    keys = [t.key for t in vocab.TOPICS]
    r = np.zeros((len(keys), len(keys)))
    for a, b in vocab.RELATED:
        r[keys.index(a), keys.index(b)] = r[keys.index(b), keys.index(a)] = 1.0
    return r


# -- edges -------------------------------------------------------------------------------------


def _capacity(nodes: _Nodes, a: str, b: str) -> int:
    na, nb = len(nodes.by_type[a].ids), len(nodes.by_type[b].ids)
    return na * (na - 1) // 2 if a == b else na * nb


def _channel_sampler(
    nodes: _Nodes,
    a: str,
    b: str,
    s: Structure,
    rng: np.random.Generator,
    total: int = 0,
    done: np.ndarray | None = None,
):
    """draw(k) -> k candidate (a-node, b-node, channel) triples from the topic/bridge/hub/noise channels.

    ``done``: links per channel the type already has (its anchors) out of ``total``, so that the
    type's overall mix stays near the configured channel probabilities.
    """
    pa, pb = nodes.by_type[a], nodes.by_type[b]
    # A topic (niche) is drawn by the geometric mean of the two types' masses in it; a bridge pairs
    # an a-topic t with a related b-topic t'.
    both = np.sqrt(pa.topic.mass * pb.topic.mass)
    both_niche = np.sqrt(pa.niche.mass * pb.niche.mass)
    rel = _related() * pb.topic.mass[None, :]
    bridge_from = np.sqrt(pa.topic.mass * rel.sum(axis=1))
    rel_cum = np.cumsum(rel / np.maximum(rel.sum(axis=1, keepdims=True), 1e-300), axis=1)
    probs = s.channel_probs.copy()
    probs[TOPIC] *= both.sum() > 0
    probs[BRIDGE] *= bridge_from.sum() > 0
    probs[HUB] *= len(pa.hub_ids) + len(pb.hub_ids) > 0
    if done is not None and probs.sum() > 0:
        probs = np.maximum(probs / probs.sum() * total - done[: len(probs)], 0)
    if probs.sum() == 0:
        probs[NOISE] = 1.0
    probs /= probs.sum()
    p_hub_on_a = 0.5 if len(pa.hub_ids) and len(pb.hub_ids) else float(len(pa.hub_ids) > 0)

    def draw(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ch = rng.choice(len(probs), size=k, p=probs)
        ua, ub = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64)
        sel = np.flatnonzero(ch == TOPIC)
        in_niche = rng.random(len(sel)) < (s.p_niche if both_niche.sum() > 0 else 0.0)
        i, j = sel[in_niche], sel[~in_niche]
        g = _pick(both_niche, len(i), rng)
        ua[i], ub[i] = pa.niche.draw(g, rng), pb.niche.draw(g, rng)
        t = _pick(both, len(j), rng)
        ua[j], ub[j] = pa.topic.draw(t, rng), pb.topic.draw(t, rng)
        sel = ch == BRIDGE
        t = _pick(bridge_from, sel.sum(), rng)
        t2 = (rel_cum[t] < rng.random(len(t))[:, None]).sum(axis=1).clip(0, len(both) - 1)
        ua[sel], ub[sel] = pa.topic.draw(t, rng), pb.topic.draw(t2, rng)
        sel = np.flatnonzero(ch == HUB)
        on_a = rng.random(len(sel)) < p_hub_on_a
        i, j = sel[on_a], sel[~on_a]
        ua[i], ub[i] = _draw(pa.hub_ids, pa.hub_cum, len(i), rng), _draw(pb.ids, pb.cum, len(i), rng)
        ua[j], ub[j] = _draw(pa.ids, pa.cum, len(j), rng), _draw(pb.hub_ids, pb.hub_cum, len(j), rng)
        sel = ch == NOISE
        ua[sel], ub[sel] = _draw(pa.ids, pa.noise_cum, sel.sum(), rng), _draw(pb.ids, pb.noise_cum, sel.sum(), rng)
        return ua, ub, ch.astype(np.int8)

    return draw


def _closure_sampler(
    nodes: _Nodes, a: str, b: str, base: sp.csr_matrix, to_type: Mapping[str, sp.csr_matrix], rng: np.random.Generator
):
    """draw(k) -> k candidate pairs (u, v) closing an open wedge u - x - v of the base graph.

    The middle x is drawn by its number of (a, b) wedges divided by its degree, so that closures
    run mostly through specific shared neighbours rather than hubs (Swanson's A-B-C discovery).
    Returns None when the base graph has no such wedge.
    """
    ids_a, ids_b = nodes.by_type[a].ids, nodes.by_type[b].ids
    to_a, to_b = to_type[a], to_type[b]
    da, db = np.diff(to_a.indptr), np.diff(to_b.indptr)
    wedges = (da * (da - 1) if a == b else da * db) / np.maximum(np.diff(base.indptr), 1)
    if wedges.sum() == 0:
        return None
    cum = np.cumsum(wedges)

    def draw(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = np.minimum(np.searchsorted(cum, rng.random(k) * cum[-1], side="right"), len(cum) - 1)
        ua = ids_a[to_a.indices[to_a.indptr[x] + (rng.random(k) * da[x]).astype(np.int64)]]
        ub = ids_b[to_b.indices[to_b.indptr[x] + (rng.random(k) * db[x]).astype(np.int64)]]
        return ua, ub, np.full(k, CLOSURE, dtype=np.int8)

    return draw


def _anchors(
    nodes: _Nodes, budget: Mapping[str, int], s: Structure, rng: np.random.Generator
) -> dict[str, tuple[np.ndarray, ...]]:
    """One edge per non-hub entity (every entity of the release has a link with Count >= floor).

    Each entity picks an edge type in proportion to the budgets of the types it can take part in,
    and a partner of the other type from its own niche (or topic; anyone when it has no topic).
    Returns per edge type the distinct pairs, at most the type's budget.
    """
    picked: dict[str, list[tuple[np.ndarray, ...]]] = {e: [] for e in budget}
    for t, pool in nodes.by_type.items():
        options = [(e, m) for e, m in budget.items() if m > 0 and t in e.split("-")]
        if not options:
            continue
        own = pool.ids[~nodes.hub[pool.ids]]
        weights = np.array([m for _, m in options], dtype=float)
        choice = rng.choice(len(options), size=len(own), p=weights / weights.sum())
        for k, (etype, _) in enumerate(options):
            n = own[choice == k]
            a, b = etype.split("-")
            other = nodes.by_type[b if a == t else a]
            partner = _draw(other.ids, other.cum, len(n), rng)
            niche, topic = nodes.primary_niche[n], nodes.primary[n]
            use_niche = (niche >= 0) & (rng.random(len(n)) < s.p_niche)
            use_niche &= other.niche.mass[np.maximum(niche, 0)] > 0
            use_topic = ~use_niche & (topic >= 0) & (other.topic.mass[np.maximum(topic, 0)] > 0)
            partner[use_niche] = other.niche.draw(niche[use_niche], rng)
            partner[use_topic] = other.topic.draw(topic[use_topic], rng)
            ch = np.where(use_niche | use_topic, TOPIC, NOISE).astype(np.int8)
            picked[etype].append(((n, partner) if a == t else (partner, n)) + (ch,))
    out = {}
    n_all = len(nodes.names)
    for etype, pairs in picked.items():
        a, b = etype.split("-")
        ua, ub, ch = (np.concatenate(x) for x in zip(*pairs)) if pairs else (np.empty(0, np.int64),) * 3
        if a == b:
            ok = ua != ub
            ua, ub, ch = np.minimum(ua, ub)[ok], np.maximum(ua, ub)[ok], ch[ok]
        _, first = np.unique(ua * n_all + ub, return_index=True)
        first = np.sort(first)[: budget[etype]]
        out[etype] = (ua[first], ub[first], ch[first].astype(np.int8))
    return out


def _collect(draw, m: int, taken: np.ndarray, n_all: int, same: bool, fallback) -> tuple[np.ndarray, ...]:
    """m new distinct pairs from ``draw``, none in ``taken`` (keys u * n_all + v); first draws win.

    After 30 rounds (a small, saturated edge type) the rest comes from ``fallback``.
    """
    keys = taken
    have = 0
    out: list[tuple[np.ndarray, ...]] = []
    rounds = 0
    while have < m:
        ua, ub, ch = (draw if rounds < 30 else fallback)(int(1.3 * (m - have)) + 64)
        if same:
            ok = ua != ub
            ua, ub, ch = np.minimum(ua, ub)[ok], np.maximum(ua, ub)[ok], ch[ok]
        key = ua * n_all + ub
        _, first = np.unique(key, return_index=True)
        first.sort()
        fresh = first[~np.isin(key[first], keys)][: m - have]
        keys = np.concatenate([keys, key[fresh]])
        out.append((ua[fresh], ub[fresh], ch[fresh]))
        have += len(fresh)
        rounds += 1
    if not out:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int8)
    return tuple(np.concatenate(x) for x in zip(*out))


def _uniform_sampler(nodes: _Nodes, a: str, b: str, rng: np.random.Generator):
    ids_a, ids_b = nodes.by_type[a].ids, nodes.by_type[b].ids
    return lambda k: (rng.choice(ids_a, k), rng.choice(ids_b, k), np.full(k, NOISE, dtype=np.int8))


def _years_and_counts(
    nodes: _Nodes,
    ua: np.ndarray,
    ub: np.ndarray,
    ch: np.ndarray,
    s: Structure,
    years: tuple[int, int],
    min_count: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """First-co-occurrence year by novelty rank; support count >= min_count, larger for old, popular links."""
    m = len(ua)
    pop = np.log(nodes.weight[ua]) + np.log(nodes.weight[ub])
    pop = (pop - pop.mean()) / (pop.std() + 1e-12)
    novelty = np.array(s.novelty_shift)[ch] - s.novelty_popularity * pop + s.novelty_noise * rng.standard_normal(m)
    q = (np.argsort(np.argsort(novelty, kind="stable"), kind="stable") + 0.5) / m
    span = years[1] - years[0] + 1
    r = s.growth_rate
    # Inverse CDF of a literature growing as exp(r t) over the span: the q-th newest link's year.
    offset = np.log1p(q * np.expm1(r * span)) / r if r > 0 else q * span
    year = years[0] + np.minimum(np.floor(offset).astype(np.int64), span - 1)
    alpha = np.where(ch == NOISE, s.noise_count_alpha, s.count_alpha)
    age = 1.0 + (years[1] - year) / 20.0
    boost = np.where(ch == NOISE, 1.0, np.exp(0.25 * np.clip(pop, 0, None)))
    raw = min_count * np.exp(rng.exponential(size=m) / alpha) * age * boost
    # Saturates at max_count: even "Graphene"-"Structure" has ~9k papers in the release.
    count = raw / (1.0 + raw / s.max_count)
    return year, np.maximum(min_count, np.floor(count)).astype(np.int64)
