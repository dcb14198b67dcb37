"""Paper §2.1: a weighted heterogeneous knowledge graph G = (V, E, phi, psi, c).

Nodes are identified by (type, name); edges are undirected, typed by the unordered pair of their
endpoint types, and carry a support count c >= 1 and a year (earliest paper; -1 when unknown).
The schema (node types, hypothesis relations, evidence edge-type sets) comes from config, so
nothing here knows about MatKG.

Two kinds of pair are true without being edges of a graph, and so are neither candidates nor
negatives of any relation (the split, the candidate space and the retrospective answers all ask
``KG.excluded``):
- *masked* pairs: observed edges withheld from this graph, e.g. the undated edges ``until`` leaves
  out (their link is real, only its date is unknown; as a candidate it would count as a miss).
- *implied* pairs, from an ontology hierarchy (``ancestors``): under the true-path rule of an
  ontology such as HPO, an annotation to a term implies one to every ancestor of the term, so
  (u, ancestor of w) is true whenever (u, w) is an edge. Descendants are not implied: a more
  specific term is a real (if weaker) discovery.

Which nodes exist at a date (``KG.known``): a node is known through an edge of a *dated* type (one
not in the schema's ``static_edge_types``), or by its own creation year (``created``, e.g. HPO
terms' ``creation_date`` in hp.obo) at or before the graph's date (``as_of``, set by ``until``).
Static edges (an ontology's is_a, a material's composition) describe known nodes but do not make a
node known: the synthesis recipes hold no composition that was never made, so a target first made
after a cutoff would otherwise be a candidate at the cutoff, and "is only described by static
edges" alone ranked the 2014 answers at whole-space AUC 0.811 (issue #34).

A graph at a date (``until``) holds a node's static edges only once the node exists (``made_by``):
a material and its composition enter in the material's first recorded year, an ontology term in its
creation year. What ``until`` leaves out for that reason is kept aside (``withheld``), so that an
entity being asked about or scored after the cutoff (a new material, given by its composition as a
user would supply it) can be described at scoring time only (``describe``): its static edges are
*supplied* one way. The supplied node reads the graph (its adjacency row holds its partners; it
receives a GNN's messages) but the graph does not see it (no other node's row, degree or messages
change), so describing many new entities at once scores each as if it alone were added to the graph
as it was (issue #54: the cut graph at 2010 held all 82,451 Target-Element edges, 40,760 of them dated
later, and the GNN's training graph 11,448 targets unknown then).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np
import polars as pl
import scipy.sparse as sp

NO_YEAR = -1


class DataError(ValueError):
    """Bad user input (file, row, option). Printed as one line, never with a traceback."""


@dataclass(frozen=True)
class Relation:
    """A hypothesis relation r with endpoint types t_u(r), t_v(r) (paper §2.2)."""

    name: str
    src: str
    dst: str

    @property
    def label(self) -> str:
        return f"{self.src}-{self.dst}"


@dataclass(frozen=True)
class Schema:
    node_types: tuple[str, ...]
    relations: Mapping[str, Relation] = field(default_factory=dict)
    # node type -> edge types ("CHM-PRO") whose edges describe a node of that type (paper Table 7)
    evidence: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    display: Mapping[str, str] = field(default_factory=dict)
    # Edge types known at any date (an ontology's is_a, a material's composition): ``KG.until`` keeps them.
    static: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, cfg: Mapping) -> "Schema":
        node_types = tuple(cfg["node_types"])
        relations = {
            name: Relation(name, str(r["src"]), str(r["dst"]))
            for name, r in (cfg.get("relations") or {}).items()
        }
        evidence = {t: tuple(v) for t, v in (cfg.get("evidence") or {}).items()}
        schema = cls(node_types, relations, evidence, dict(cfg.get("display") or {}), tuple(cfg.get("static_edge_types") or ()))
        schema.validate()
        return schema

    def validate(self) -> None:
        known = set(self.node_types)
        if len(known) != len(self.node_types):
            raise DataError(f"schema: node_types has duplicates: {list(self.node_types)}")
        for r in self.relations.values():
            for t in (r.src, r.dst):
                if t not in known:
                    raise DataError(
                        f"schema: relation {r.name!r} uses node type {t!r}; expected one of {sorted(known)}"
                    )
        for t, etypes in self.evidence.items():
            if t not in known:
                raise DataError(f"schema: evidence set for unknown node type {t!r}")
            for e in etypes:
                a, _, b = e.partition("-")
                if a != t or b not in known:
                    raise DataError(
                        f"schema: evidence edge type {e!r} for {t} must look like '{t}-<type>' with a known type"
                    )
        for e in self.static:
            a, _, b = e.partition("-")
            if a not in known or b not in known:
                raise DataError(f"schema: static_edge_types entry {e!r} must look like '<type>-<type>' with known types")

    def edge_type(self, a: str, b: str) -> str:
        """Canonical name of the undirected edge type between node types a and b."""
        ia, ib = self.node_types.index(a), self.node_types.index(b)
        return f"{a}-{b}" if ia <= ib else f"{b}-{a}"

    def canonical(self, edge_type: str) -> str:
        a, _, b = edge_type.partition("-")
        return self.edge_type(a, b)

    def relation(self, name: str) -> Relation:
        try:
            return self.relations[name]
        except KeyError:
            raise DataError(
                f"relation={name!r} is not a hypothesis relation of this KG; expected one of {sorted(self.relations)}"
            ) from None

    def display_name(self, node_type: str) -> str:
        return self.display.get(node_type, node_type)


class KG:
    """Typed nodes and undirected typed weighted edges, with a CSR adjacency built once.

    ``nodes``: id (0..N-1, row order), name, type.  ``edges``: u < v node ids, type (canonical edge
    type), count >= 1, year.  Node ids are positions, so every derived graph (e.g. the training
    graph of a split) shares the node indexing of the graph it came from.
    """

    def __init__(self, schema: Schema, nodes: pl.DataFrame, edges: pl.DataFrame, masked: pl.DataFrame | None = None,
                 ancestors: sp.csr_matrix | None = None):
        """``masked``: pairs (u, v) withheld from the graph but known to be linked (module docstring);
        ``ancestors``: N x N sparse, [i, j] != 0 iff node j is a proper ancestor of node i in the
        KG's ontology hierarchy (transitively closed; None: no hierarchy). ``nodes`` may carry a
        ``created`` column: the year a node came into being (null: unknown; ``known``), and a ``key``
        column: its id in the source (``keys``)."""
        self.schema = schema
        self.created: np.ndarray | None = (nodes["created"].cast(pl.Int32).fill_null(NO_YEAR).to_numpy()
                                           if "created" in nodes.columns else None)
        self.as_of: int | None = None  # the year this graph is known at (``until``); None: every edge
        self.nodes = nodes.select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("id"),
            pl.col("name").cast(pl.String),
            pl.col("type").cast(pl.String),
            *([pl.col("key").cast(pl.String)] if "key" in nodes.columns else []),  # a source's own id (``key``)
        )
        u, v = edges["u"].cast(pl.Int64), edges["v"].cast(pl.Int64)
        self.edges = pl.DataFrame(
            {
                "u": pl.select(pl.min_horizontal(u, v)).to_series(),
                "v": pl.select(pl.max_horizontal(u, v)).to_series(),
                "type": edges["type"].cast(pl.String),
                "count": edges["count"].cast(pl.Int64),
                "year": (edges["year"] if "year" in edges.columns else pl.Series([NO_YEAR] * len(edges)))
                .cast(pl.Int32)
                .fill_null(NO_YEAR),
            }
        )
        if masked is None or masked.height == 0:
            self.masked = pl.DataFrame({"u": [], "v": []}, schema={"u": pl.Int64, "v": pl.Int64})
        else:
            mu, mv = masked["u"].cast(pl.Int64), masked["v"].cast(pl.Int64)
            self.masked = pl.DataFrame({"u": pl.select(pl.min_horizontal(mu, mv)).to_series(),
                                        "v": pl.select(pl.max_horizontal(mu, mv)).to_series()}).unique()
        if ancestors is not None:
            ancestors = sp.csr_matrix(ancestors, dtype=bool)
            if ancestors.shape != (self.num_nodes, self.num_nodes):
                raise ValueError(f"ancestors is {ancestors.shape}; expected ({self.num_nodes}, {self.num_nodes})")
        self.ancestors = ancestors
        # A subgraph sample's source nodes (name, type), kept by reference (``data.subgraph``); None when
        # this KG is not a sample. A check of a configured name (a descriptor's ignored names) reads it,
        # so that a name the sample happened to drop is not taken for a typo.
        self.source_nodes: pl.DataFrame | None = None
        self.kept_in_sample = 0  # nodes a sample kept beyond its draw (named entities and their neighbours)
        # static edges ``until`` left out because an end was not made yet (``describe`` supplies them)
        self.withheld = pl.DataFrame(schema=self.edges.schema)
        self.supplied = np.zeros(0, dtype=np.int64)  # nodes whose static edges were supplied one way (``describe``)
        # nodes with static edges only (a chemical element): they exist at every date (``made_by``); read from the
        # graph as built, and kept by every graph derived from it (a cut or split graph may have lost a node's others)
        static = self.edges["type"].is_in([schema.canonical(e) for e in schema.static])
        moving = self.edges.filter(~static)
        self.timeless = np.ones(self.num_nodes, dtype=bool)
        self.timeless[moving["u"].to_numpy()] = False
        self.timeless[moving["v"].to_numpy()] = False

    # -- basic views -------------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return self.nodes.height

    @property
    def num_edges(self) -> int:
        return self.edges.height

    @cached_property
    def node_types(self) -> np.ndarray:
        """Type index (into schema.node_types) per node."""
        return _codes(self.nodes["type"], self.schema.node_types)

    @cached_property
    def names(self) -> list[str]:
        return self.nodes["name"].to_list()

    @cached_property
    def edge_types(self) -> tuple[str, ...]:
        """Edge types present, in a stable (sorted) order: the index used by ``edge_type_ids``."""
        return tuple(sorted(self.edges["type"].unique().to_list()))

    @cached_property
    def edge_type_ids(self) -> np.ndarray:
        return _codes(self.edges["type"], self.edge_types)

    @cached_property
    def _index(self) -> dict[tuple[str, str], int]:
        return {(t, n): i for i, (n, t) in enumerate(zip(self.names, self.nodes["type"].to_list()))}

    def node_id(self, node_type: str, name: str) -> int:
        try:
            return self._index[(node_type, name)]
        except KeyError:
            raise DataError(f"no node {name!r} of type {node_type}") from None

    def nodes_of_type(self, node_type: str) -> np.ndarray:
        return np.flatnonzero(self.node_types == self.schema.node_types.index(node_type))

    def label(self, node: int) -> str:
        return self.names[node]

    @cached_property
    def keys(self) -> list[str | None]:
        """Each node's id in its source (HPO's 'OMIM:154700', 'HP:0001166'), where the loader keeps a
        ``key`` column; None for every node otherwise."""
        return self.nodes["key"].to_list() if "key" in self.nodes.columns else [None] * self.num_nodes

    def type_of(self, node: int) -> str:
        return self.schema.node_types[self.node_types[node]]

    # -- adjacency -----------------------------------------------------------------------------
    @cached_property
    def adjacency(self) -> sp.csr_matrix:
        """N×N CSR whose data are edge ids + 1 (0 means no edge); symmetric but for the edges of
        ``supplied`` nodes, which only their own rows hold (module docstring).

        One matrix serves neighbourhood queries (indptr slices), edge lookup and path counting.
        """
        n, m = self.num_nodes, self.num_edges
        u, v = self.edges["u"].to_numpy(), self.edges["v"].to_numpy()
        ids = np.arange(1, m + 1, dtype=np.int64)
        # a supplied node's edges are in its own row only (``describe``): u sees v unless only v is supplied
        su, sv = np.isin(u, self.supplied), np.isin(v, self.supplied)
        fwd, bwd = ~(sv & ~su), ~(su & ~sv)
        mat = sp.csr_matrix(
            (np.concatenate([ids[fwd], ids[bwd]]), (np.concatenate([u[fwd], v[bwd]]), np.concatenate([v[fwd], u[bwd]]))),
            shape=(n, n),
        )
        mat.sort_indices()
        return mat

    def neighbors(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """(neighbour ids, edge ids) of a node."""
        a = self.adjacency
        s, e = a.indptr[node], a.indptr[node + 1]
        return a.indices[s:e], a.data[s:e] - 1

    def edge_id(self, u: int, v: int) -> int:
        """Edge id between u and v, or -1."""
        return int(self.adjacency[u, v]) - 1

    def has_edges(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Vectorised membership test for node pairs."""
        if len(u) == 0:
            return np.zeros(0, dtype=bool)
        # np.array copies: scipy refuses the read-only views polars' to_numpy() returns.
        return np.asarray(self.adjacency[np.array(u), np.array(v)]).ravel() > 0

    @cached_property
    def counts(self) -> np.ndarray:
        return self.edges["count"].to_numpy()

    @cached_property
    def degree(self) -> np.ndarray:
        return np.diff(self.adjacency.indptr)

    @cached_property
    def known(self) -> np.ndarray:
        """Per node: whether it exists in this graph (module docstring): an edge of a dated (non-static)
        type, or a creation year at or before ``as_of`` (any creation year when ``as_of`` is None)."""
        static = [self.schema.canonical(e) for e in self.schema.static]
        dated = self.edges.filter(~pl.col("type").is_in(static))
        out = np.zeros(self.num_nodes, dtype=bool)
        out[dated["u"].to_numpy()] = True
        out[dated["v"].to_numpy()] = True
        if self.created is not None:
            made = self.created != NO_YEAR
            out |= made & (self.created <= self.as_of) if self.as_of is not None else made
        return out

    # -- pairs that are true without being edges (module docstring) ---------------------------
    @cached_property
    def implied_adjacency(self) -> sp.csr_matrix | None:
        """Symmetric N x N bool: the pairs the true-path rule implies from this graph's edges and
        ``ancestors`` ((u, j) for every edge (u, w) between two node types and ancestor j of w),
        minus the edges themselves; None without a hierarchy. Only edges between two types imply
        anything: the hierarchy's own edges (is_a, one type) are no annotations."""
        if self.ancestors is None:
            return None
        a = self.adjacency.tocoo()
        cross = self.node_types[a.row] != self.node_types[a.col]
        a = sp.csr_matrix((np.ones(int(cross.sum()), dtype=bool), (a.row[cross], a.col[cross])), shape=a.shape)
        up = (a @ self.ancestors).astype(bool)
        implied = (up + up.T).astype(bool).tocsr()
        implied = implied - implied.multiply(a)  # an edge is an edge, not an implication
        implied.eliminate_zeros()
        return implied

    @cached_property
    def excluded_adjacency(self) -> sp.csr_matrix | None:
        """Symmetric N x N bool of the masked and the implied pairs (None when there are none)."""
        out = self.implied_adjacency
        if self.masked.height:
            u, v = self.masked["u"].to_numpy(), self.masked["v"].to_numpy()
            ones = np.ones(2 * len(u), dtype=bool)
            m = sp.csr_matrix((ones, (np.concatenate([u, v]), np.concatenate([v, u]))), shape=(self.num_nodes,) * 2)
            out = m if out is None else (out + m).astype(bool).tocsr()
        return out

    def excluded(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Pairs that are true but not edges here (masked or implied): never a negative, never a candidate."""
        if self.excluded_adjacency is None or len(u) == 0:
            return np.zeros(len(u), dtype=bool)
        return np.asarray(self.excluded_adjacency[np.array(u), np.array(v)]).ravel()

    def excluded_block(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
        """``excluded`` for every pair src[i] x dst[j] as an S x D bool array (None when nothing is)."""
        if self.excluded_adjacency is None:
            return None
        return self.excluded_adjacency[src][:, dst].toarray()

    # -- derived graphs ----------------------------------------------------------------------
    def _derived(self, edges: pl.DataFrame, masked: pl.DataFrame | None = None) -> "KG":
        masked = self.masked if masked is None else pl.concat([self.masked, masked.select("u", "v")])
        out = KG(self.schema, self.nodes, edges, masked, self.ancestors)
        out.source_nodes, out.created, out.as_of = self.source_nodes, self.created, self.as_of
        out.kept_in_sample, out.withheld, out.supplied = self.kept_in_sample, self.withheld, self.supplied
        out.timeless = self.timeless
        return out

    def without_edges(self, edge_ids: np.ndarray) -> "KG":
        """Same nodes (same ids), minus the given edges: e.g. the training graph of a split."""
        keep = np.ones(self.num_edges, dtype=bool)
        keep[np.asarray(edge_ids, dtype=np.int64)] = False
        return self._derived(self.edges.filter(pl.Series(keep)))

    def until(self, year: int) -> "KG":
        """Same nodes (same ids), only the edges dated ``NO_YEAR < year' <= year`` and those of the
        schema's ``static_edge_types`` (known at any date) between nodes made by then (``made_by``):
        the graph as it was known at the end of ``year`` (retrospective discovery); the hierarchy
        (``ancestors``) among the nodes made by then. The static edges of nodes made later are kept
        aside (``withheld``, for ``describe``). Undated edges are left out too (their date is unknown,
        so they might come from after the cutoff) and become masked pairs: a real link of unknown date
        is neither a candidate nor a negative, nor a miss of the ranking that finds it."""
        if len(self.supplied):  # a description supplied at this graph's date did not exist earlier
            return self._undescribed().until(year)
        dated = self.edges["year"]
        static = self.edges["type"].is_in([self.schema.canonical(e) for e in self.schema.static])
        made = self.made_by(year)
        existing = static & pl.Series(made[self.edges["u"].to_numpy()] & made[self.edges["v"].to_numpy()])
        known = existing | (~static & (dated != NO_YEAR) & (dated <= year))
        out = self._derived(self.edges.filter(known), self.edges.filter(~static & (dated == NO_YEAR)))
        out.withheld = pl.concat([self.withheld, self.edges.filter(static & ~existing)])
        out.as_of = int(year) if self.as_of is None else min(int(year), self.as_of)
        if self.ancestors is not None and not made.all():  # the hierarchy among the terms of that date
            kept = sp.csr_matrix(self.ancestors.multiply(made[:, None]).multiply(made[None, :]), dtype=bool)
            kept.eliminate_zeros()
            out.ancestors = kept
        return out

    def made_by(self, year: int) -> np.ndarray:
        """Per node: whether it existed at the end of ``year``, for its static edges (an ontology's
        is_a, a composition): linked by a dated edge of a dated type by then (a material's first recipe),
        or, where the KG records creation years (``created``: HPO's terms), created by then or with no
        creation year (HPO's terms older than hp.obo's ``creation_date`` tag); without creation years, a
        node that has only static edges in the graph as built (a chemical element: ``timeless``) exists at
        every date. So a material first made
        later, or one whose recipes carry no date, is not made: its composition is ``withheld``. A static
        edge to a node made later is no edge of the graph ``until`` gives (at HPO 2012, 1,888 is_a edges
        touch a term created after it; issue #45; at recipes 2010, 40,760 Target-Element edges, issue
        #54), and the hierarchy keeps only the ancestry among existing terms (the release's closure
        restricted to them: A is_a B is_a C, with B created later, keeps C as an ancestor of A; the
        release does not say what A's parent was before B)."""
        static = pl.col("type").is_in([self.schema.canonical(e) for e in self.schema.static])
        if self.created is None:
            out = self.timeless.copy()
        else:
            out = (self.created == NO_YEAR) | (self.created <= year)
        e = self.edges.filter(~static & (pl.col("year") != NO_YEAR) & (pl.col("year") <= year))
        out[e["u"].to_numpy()] = True
        out[e["v"].to_numpy()] = True
        return out

    def describe(self, nodes: np.ndarray) -> "KG":
        """This graph with the ``withheld`` static edges of ``nodes`` supplied (module docstring): each
        such node gets its description (a new material's composition) as a user would give it at the
        graph's date (the edges dated ``as_of``, count 1: the later recipes' count is unknown then),
        one way (``supplied``): every other node's row, degree and messages stay as they were. Only nodes
        without an edge here are described. Returns this graph itself when none of ``nodes`` has a
        withheld edge. ``until`` on the result cuts the graph without the descriptions."""
        nodes = np.unique(np.asarray(nodes, dtype=np.int64))
        nodes = nodes[self.degree[nodes] == 0]  # only a node the graph does not hold yet is described
        w = self.withheld
        if not len(nodes) or not w.height:
            return self
        iu, iv = np.isin(w["u"].to_numpy(), nodes), np.isin(w["v"].to_numpy(), nodes)
        take = w.filter(pl.Series(iu ^ iv))
        if not take.height:
            return self
        year = self.as_of if self.as_of is not None else NO_YEAR
        take = take.with_columns(pl.lit(1, dtype=pl.Int64).alias("count"), pl.lit(year, dtype=pl.Int32).alias("year"))
        out = self._derived(pl.concat([self.edges, take]))
        own = np.where(iu, w["u"].to_numpy(), w["v"].to_numpy())[iu ^ iv]
        out.supplied = np.union1d(self.supplied, own)
        out.withheld = w.filter(pl.Series(~(iu ^ iv)))
        return out

    def _undescribed(self) -> "KG":
        """This graph without its supplied descriptions (``describe``), which go back to ``withheld``."""
        static = self.edges["type"].is_in([self.schema.canonical(e) for e in self.schema.static])
        mine = static & pl.Series(np.isin(self.edges["u"].to_numpy(), self.supplied)
                                  | np.isin(self.edges["v"].to_numpy(), self.supplied))
        out = self._derived(self.edges.filter(~mine))
        out.supplied, out.withheld = np.zeros(0, dtype=np.int64), pl.concat([self.withheld, self.edges.filter(mine)])
        return out

    def relation_edges(self, relation: Relation) -> pl.DataFrame:
        """Edges of a hypothesis relation, oriented src -> dst, with their edge ids."""
        etype = self.schema.edge_type(relation.src, relation.dst)
        src_idx = self.schema.node_types.index(relation.src)
        tmp = self.edges.with_row_index("edge_id").filter(pl.col("type") == etype)
        u_is_src = pl.Series(self.node_types[tmp["u"].to_numpy()] == src_idx)
        return tmp.select(
            "edge_id",
            pl.when(u_is_src).then(pl.col("u")).otherwise(pl.col("v")).alias("src"),
            pl.when(u_is_src).then(pl.col("v")).otherwise(pl.col("u")).alias("dst"),
            "count",
            "year",
        )

    def __repr__(self) -> str:
        return f"KG({self.num_nodes} nodes, {self.num_edges} edges, {len(self.edge_types)} edge types)"


def _codes(values: pl.Series, categories: Sequence[str]) -> np.ndarray:
    """Index of each value in ``categories``, in polars (a Python dict lookup per row took 0.8 s
    on the 2.7M edges of full-size MatKG, and runs again for every split's training graph)."""
    return values.replace_strict(list(categories), list(range(len(categories))), return_dtype=pl.Int64).to_numpy()
