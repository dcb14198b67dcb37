"""New compositions (issue #36): a target named by a formula the graph does not hold is added from its
elements and ranked, as in He et al.'s precursor recommendation for unseen targets (Sci. Adv. 9,
eadg8180, 2023); and every named entity's section lists what the graph already records for it.

Where it applies: ``discover.compositions.of`` is the node type a formula names and ``via`` the node
type of its elements; both come from the data's schema (``compositions`` in
conf/data/schema/synthesis_recipes.yaml: Target, Element), null elsewhere (then a name the graph does
not hold fails as before, with the closest names). A ``discover.entities`` value that matches no node
of the relation's two types exactly or case-insensitively is read as a formula (``parse``, the reading
``data.chemistry.amounts`` gives: ``Li2FeTiO4``, ``LiNi0.5Mn1.5O4``, ``Ca3(PO4)2``, ``CuSO4·5H2O``). A
value that does not parse, or whose symbol is no element of the graph, is the one-line error of
``entities.resolve`` (closest names) followed by the offending token. A target the graph holds but
does not know (with a cutoff, a target first made after it, He et al.'s unseen target, whose
composition the cut graph withholds: ``KG.until``) is ranked the same way on its own node, its
composition supplied at scoring time (``KG.describe``), when named exactly (and no other node has its
name), instead of failing for having no edges.

The new node (``with_targets``): one node of type ``of``, named by the formula as written, with one
edge to each of its elements' ``via`` nodes (count 1) and nothing else: no precursor, no operation.
The edges are dated at the graph's date (the cutoff, else its latest edge year), and the node is
marked created then, so that it is *known* (``KG.known``) and holds a row of the candidate space;
without that a node described by static edges alone is not known (issue #34). The model is the one
trained on the split (same cache key: the split never sees the new node); it passes messages over
the graph with the node added (``load_scorer(graph=...)``), whose node inputs are computed over that
graph (statistics, and the name embedding from the same names encoder, ``hygrail.names``). Only the
inductive backbones (``*_plus``: node inputs instead of a learned embedding per node) can score a node
they never saw; the others are a one-line error before training. The whole space, its figures and
the known entities' lists are scored on the graph without the new node, exactly as if none were
named: the new node's lists come from a second encoding of the graph (seconds: ``discover`` logs it
as ``discover_seconds_compositions``).

Beside the model, the per-entity baselines of ``discover.entity_baselines`` that can rank a node
without recorded partners (``BESIDE``: popularity, relation popularity, element-compatible
popularity; not 3-paths, which counts paths over the node's own relation edges, nor the learned
baselines fit on known nodes), and the recorded precursors of the ``discover.compositions.similar_k``
most similar known targets, each marked "recorded for <target>".

Similarity (``similar``): the Jaccard index of the element sets, read from the graph's composition
edges (the recipes KG carries element sets only: its Target-Element edges count recipes, not atoms);
ties are broken by the L1 distance of the atom fractions parsed from the two names where a known
target's name parses as a formula (text-mined names such as ``Ba1-xSrxTiO3`` do not: they rank after
those that do), then by name. Known targets are those with a recorded precursor in the graph.
``similar_k`` defaults to 5: He et al. propose five precursor sets per target (the success rate
entities.py's docstring quotes is for five); here each similar target contributes its recorded
precursors, not a set checked to be a recipe.

Recorded partners (``recorded``): for every named entity, known or new, its partners over the
relation in the graph discovery reads (with a cutoff: recorded by then). They are edges, so never
candidates; a chemist asking "which precursors for this target" sees them marked "recorded" beside
the ranked candidates instead of not at all. Listed by reference count (then year); a list longer
than ``discover.entity_k`` (a precursor's targets) shows its first ``entity_k`` and says how many more.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from hygrail.data.chemistry import amounts
from hygrail.discovery.space import CandidateSpace, ranking
from hygrail.kg import KG, NO_YEAR, DataError

# Per-entity baselines that can rank a node without recorded partners (module docstring).
BESIDE = ("popularity", "relation_popularity", "compatible_popularity")


@dataclass(frozen=True)
class Formula:
    text: str  # as the user wrote it (the new node's name)
    amounts: Mapping[str, float]  # element symbol -> atoms per formula unit (empty: a graph name that does not parse)
    node: int | None = None  # a node of the graph known only by its composition (``options``), else None: added
    symbols: tuple[str, ...] = ()  # that node's elements, as its composition edges give them

    @property
    def elements(self) -> tuple[str, ...]:
        return self.symbols if self.node is not None else tuple(sorted(self.amounts))


def parse(text: str) -> Formula:
    """The formula's elements and amounts (``data.chemistry.amounts``); ValueError naming the offending
    token and its character (1-based) when it is not a formula of chemical elements."""
    return Formula(text.strip(), amounts(text))


def _fractions(amounts: Mapping[str, float]) -> dict[str, float]:
    total = sum(amounts.values())
    return {e: n / total for e, n in amounts.items()}


# -- which entities are new ---------------------------------------------------------------------------
def options(d: Mapping, space: CandidateSpace) -> tuple[list, list[Formula]]:
    """(the ``discover.entities`` values that name nodes, left to ``entities.resolve``; the new
    compositions), with one-line errors for a value that is neither (module docstring)."""
    c = d.get("compositions") or {}
    given = list(d.get("entities") or [])
    of, via = c.get("of"), c.get("via")
    if not of:
        return given, []
    kg, rel = space.kg, space.relation
    for key, value in (("of", of), ("via", via)):
        if value not in kg.schema.node_types:
            raise DataError(f"discover.compositions.{key}={value!r}: expected a node type of the graph, one of "
                            f"{list(kg.schema.node_types)}")
    if of != rel.src:
        raise DataError(f"discover.compositions.of={of!r}: a new composition is a source of relation {rel.name} "
                        f"({rel.src}-{rel.dst}); expected {rel.src!r} or null")
    k = c.get("similar_k")
    if not isinstance(k, int) or k < 0:
        raise DataError(f"discover.compositions.similar_k={k!r}: expected a number of similar targets >= 0")
    pool = [int(i) for t in (rel.src, rel.dst) for i in kg.nodes_of_type(t)]
    names = {kg.names[i].casefold() for i in pool}
    elements = {kg.names[i] for i in kg.nodes_of_type(via)}
    # a target of the graph first made after the cutoff (its composition withheld: KG.until) is ranked as a new
    # one on its own node, its composition supplied as a user would give it (KG.describe), when its name is that
    # node's alone
    shared = Counter(kg.names[i] for i in pool)
    described = np.union1d(kg.withheld["u"].to_numpy(), kg.withheld["v"].to_numpy())
    dormant = {kg.names[i]: int(i) for i in np.intersect1d(kg.nodes_of_type(of), described)
               if not kg.known[i] and shared[kg.names[i]] == 1}
    known, new = [], []
    for value in given:
        text = str(value).strip()
        if text in dormant and text not in {f.text for f in new}:
            node = dormant[text]
            partners = kg.describe([node]).neighbors(node)[0]
            symbols = tuple(sorted(kg.names[p] for p in partners if kg.type_of(p) == via))
            try:
                amounts = dict(parse(text).amounts)
            except ValueError:
                amounts = {}
            new.append(Formula(text, amounts if set(amounts) == set(symbols) else {}, node, symbols))
            continue
        if isinstance(value, int) or text.isdigit() or text.casefold() in names:
            known.append(value)
            continue
        try:
            formula = parse(text)
            missing = [e for e in formula.elements if e not in elements]
            if missing:
                raise ValueError(f"{missing[0]!r} is no {via} of the graph (no material of it is recorded)")
        except ValueError as why:
            from hygrail.discovery.entities import resolve

            try:  # an accent-free or keyed spelling of a node still names it
                resolve(space, [value])
            except DataError as e:
                raise DataError(f"{e}; nor is it a new composition: {why}") from None
            known.append(value)
            continue
        if formula.text not in {f.text for f in new}:
            new.append(formula)
    return known, new


def check_backbone(backbone: Mapping, new: Sequence[Formula]) -> None:
    """Only an inductive backbone scores a node it never saw (module docstring): one line before training."""
    name = str(backbone.get("name"))
    if new and not name.endswith("_plus"):
        raise DataError(f"discover.entities: {new[0].text!r} is a new composition; backbone={name} learns one embedding "
                        f"per node it was trained with and has none for it: use an inductive backbone "
                        f"(rgcn_plus, hgt_plus, heteroconv_plus)")


# -- the graph with the new nodes -------------------------------------------------------------------
def with_targets(kg: KG, new: Sequence[Formula], of: str, via: str) -> tuple[KG, list[int]]:
    """``kg`` plus one ``of`` node per formula, each with composition edges only (module docstring):
    (the graph, the new node ids). Every other node keeps its id. A formula naming a node of the graph (a
    target first made after the cutoff) gets that node's composition now, as a user would give it
    (``KG.describe``)."""
    kg = kg.describe([f.node for f in new if f.node is not None])
    years = kg.edges["year"].filter(kg.edges["year"] != NO_YEAR)
    year = kg.as_of if kg.as_of is not None else (int(years.max()) if len(years) else NO_YEAR)
    created = kg.created.copy() if kg.created is not None else np.full(kg.num_nodes, NO_YEAR, dtype=np.int64)
    created[[f.node for f in new if f.node is not None]] = year  # known only by their composition: made known
    new_ids = iter(range(kg.num_nodes, kg.num_nodes + len(new)))
    ids = [f.node if f.node is not None else next(new_ids) for f in new]
    new = [f for f in new if f.node is None]
    element = {kg.names[i]: int(i) for i in kg.nodes_of_type(via)}
    nodes = pl.concat([
        kg.nodes.select("name", "type", pl.Series("created", created, dtype=pl.Int32)),
        pl.DataFrame({"name": [f.text for f in new], "type": [of] * len(new), "created": [year] * len(new)},
                     schema={"name": pl.String, "type": pl.String, "created": pl.Int32}),
    ])
    u = [i for i, f in zip(range(kg.num_nodes, kg.num_nodes + len(new)), new) for _ in f.elements]
    v = [element[e] for f in new for e in f.elements]
    edges = pl.concat([kg.edges, pl.DataFrame({
        "u": pl.Series(np.minimum(u, v), dtype=pl.Int64), "v": pl.Series(np.maximum(u, v), dtype=pl.Int64),
        "type": [kg.schema.edge_type(of, via)] * len(u), "count": pl.Series([1] * len(u), dtype=pl.Int64),
        "year": pl.Series([year] * len(u), dtype=pl.Int32)})])
    ancestors = kg.ancestors
    if ancestors is not None:
        ancestors = ancestors.copy()
        ancestors.resize((kg.num_nodes + len(new),) * 2)
    out = KG(kg.schema, nodes, edges, kg.masked, ancestors)
    out.as_of, out.source_nodes, out.kept_in_sample = kg.as_of, kg.source_nodes, kg.kept_in_sample
    return out, ids


# -- similar known targets -------------------------------------------------------------------------
def similar(kg: KG, formula: Formula, relation, via: str, k: int, exclude: Sequence[int] = ()) -> pl.DataFrame:
    """The ``k`` known targets most similar to ``formula`` (module docstring): target, id, jaccard,
    stoichiometry_l1 (null where the name does not parse)."""
    etype = kg.schema.edge_type(relation.src, via)
    comp = kg.edges.filter(pl.col("type") == etype)
    src_code = kg.schema.node_types.index(relation.src)
    u, v = comp["u"].to_numpy(), comp["v"].to_numpy()
    target = np.where(kg.node_types[u] == src_code, u, v)
    element = np.where(kg.node_types[u] == src_code, v, u)
    with_partners = np.unique(kg.relation_edges(relation)["src"].to_numpy())
    keep = np.isin(target, with_partners) & ~np.isin(target, np.asarray(exclude, dtype=np.int64))
    mine = {kg.node_id(via, e) for e in formula.elements}
    sets: dict[int, set[int]] = {}
    for t, e in zip(target[keep].tolist(), element[keep].tolist()):
        sets.setdefault(t, set()).add(e)
    mine_frac = _fractions(formula.amounts) if formula.amounts else None
    rows = []
    for t, s in sets.items():
        jac = len(s & mine) / len(s | mine)
        l1 = None
        if mine_frac is not None:
            try:
                theirs = _fractions(parse(kg.names[t]).amounts)
                l1 = sum(abs(mine_frac.get(e, 0.0) - theirs.get(e, 0.0)) for e in set(mine_frac) | set(theirs))
            except ValueError:  # a text-mined name that is no formula
                pass
        rows.append((kg.names[t], t, jac, l1))
    rows.sort(key=lambda r: (-r[2], r[3] is None, r[3] or 0.0, r[0]))
    return pl.DataFrame(rows[:k], schema={"target": pl.String, "id": pl.Int64, "jaccard": pl.Float64,
                                          "stoichiometry_l1": pl.Float64}, orient="row")


# -- what the graph records ---------------------------------------------------------------------------
def recorded(kg: KG, node: int, relation) -> pl.DataFrame:
    """``node``'s partners over ``relation`` in ``kg``: partner, id, references (the edge count), year
    (first), most referenced first (then earliest, then name)."""
    edges = kg.relation_edges(relation)
    mine = edges.filter((pl.col("src") == node) | (pl.col("dst") == node))
    partner = np.where(mine["src"].to_numpy() == node, mine["dst"].to_numpy(), mine["src"].to_numpy())
    return pl.DataFrame({
        "partner": [kg.names[p] for p in partner], "id": pl.Series(partner, dtype=pl.Int64),
        "references": mine["count"], "year": mine["year"].replace(NO_YEAR, None)},
        schema={"partner": pl.String, "id": pl.Int64, "references": pl.Int64, "year": pl.Int32},
    ).sort(["references", "year", "partner"], descending=[True, False, False], nulls_last=True)


def recorded_part(kg: KG, entity, relation, partner_name: str, k: int) -> tuple[str, pl.DataFrame]:
    """The section part listing what the graph records for ``entity``, each marked "recorded"."""
    rec = recorded(kg, entity.node, relation)
    head = (f"Recorded in the graph ({rec.height}; edges, so not ranked as candidates"
            + (f"; the {k} most referenced shown" if rec.height > k else "") + ")")
    table = rec.head(k).select(pl.col("partner").alias(partner_name), "id", pl.lit("recorded").alias("mark"),
                               "references", "year")
    return head, table


# -- the sections --------------------------------------------------------------------------------------
def add_sections(report, d: Mapping, space: CandidateSpace, new: Sequence[Formula], scorer_for: Callable, band,
                 seed: int, future=None):
    """``report`` (an ``entities.EntityReport``, or None) with each named entity's recorded partners
    and one section per new composition (module docstring); ``scorer_for(graph)``: the trained model
    scoring over ``graph`` (``load_scorer(graph=...)``); ``future`` (a cutoff's ``retro.Future``):
    the year each listed pair was first recorded after the cutoff, if it was."""
    from hygrail.discovery.entities import BASELINES, Entity, EntityReport, baseline_options, entity_pairs, rank_entity
    from hygrail.discovery.scoring import GNNBlocks

    kg, rel = space.kg, space.relation
    k = int(d["entity_k"])
    if report is None:
        show = kg.schema.display_name
        report = EntityReport([], {rel.src: show(rel.dst), rel.dst: show(rel.src)}, metrics={})
    for lst in report.lists:
        lst.parts.append(recorded_part(kg, lst.entity, rel, report.partner_type[lst.entity.node_type], k))
    if not new:
        return report
    t0 = time.perf_counter()
    c = d["compositions"]
    graph, ids = with_targets(kg, new, c["of"], c["via"])
    space_new = CandidateSpace(graph, rel)
    gnn = GNNBlocks(scorer_for(graph), space_new, int(d["block_pairs"]))
    options = baseline_options(d)
    years = None  # a target known only by its composition has its answers among the new entities' (retro.Future)
    if future is not None:
        years = {(a, b): y for src, dst, year in ((future.src, future.dst, future.year),
                                                  (future.new_src, future.new_dst, future.new_year))
                 for a, b, y in zip(src.tolist(), dst.tolist(), year.tolist())}
    beside = {b: (BASELINES[b][0], BASELINES[b][1](graph, space_new, options))
              for b in dict.fromkeys(d.get("entity_baselines") or []) if b in BESIDE}
    for formula, node in zip(new, ids):
        entity = Entity(node, formula.text, rel.src, (), rel.name)
        lst = rank_entity(space_new, gnn, band, entity, k, seed, years)
        src, dst = entity_pairs(space_new, entity)
        order = ranking(gnn.pairs(src, dst), src, dst, seed)
        gnn_rank = dict(zip(dst[order].tolist(), range(1, len(order) + 1)))
        lst.table, lst.parts = new_parts(graph, space_new, formula, node, lst.table, gnn_rank, beside, c["via"],
                                         int(c["similar_k"]), k, seed)
        report.metrics[f"discover_entity_seconds_{len(report.lists)}"] = lst.seconds
        report.lists.append(lst)
    report.metrics["discover_seconds_compositions"] = time.perf_counter() - t0
    return report


def new_parts(graph: KG, space: CandidateSpace, formula: Formula, node: int, gnn_table: pl.DataFrame,
              gnn_rank: Mapping[int, int], beside: Mapping[str, tuple[str, Callable]], via: str, k_similar: int,
              k: int, seed: int) -> tuple[pl.DataFrame, list[tuple[str, pl.DataFrame | None]]]:
    """(the GNN's list with a "recorded for" column, the section's other parts: what was added, the
    baselines' lists and the recorded precursors of the most similar known targets); ``gnn_rank``:
    each candidate's rank in the GNN's list of all of them."""
    rel = space.relation
    partner = graph.schema.display_name(rel.dst)
    near = similar(graph, formula, rel, via, k_similar, exclude=[node])
    used: dict[int, list[str]] = {}  # precursor -> the similar targets it is recorded for, most similar first
    for t in near["id"].to_list():
        for p in recorded(graph, t, rel)["id"].to_list():
            used.setdefault(p, []).append(graph.names[t])
    mark = lambda p: "recorded for " + ", ".join(used[p]) if p in used else ""  # noqa: E731
    gnn_table = gnn_table.with_columns(pl.Series("recorded for", [mark(p) for p in gnn_table["id"].to_list()]))
    what = (f"is no {rel.src} of the graph; it was added as one (id {node}) with composition edges to "
            f"{', '.join(formula.elements)} only" if formula.node is None else
            f"is a {rel.src} of the graph known only by its composition ({', '.join(formula.elements)}; with a "
            f"cutoff: first recorded after it); it was ranked as a new one on its own node")
    parts: list[tuple[str, pl.DataFrame | None]] = [(
        f"New composition: '{formula.text}' {what}, and the trained model scored it over the graph with it (its "
        f"name embedded by the same encoder).", None)]
    block = space.block(np.array([node], dtype=np.int64))
    cand = space.dst[block.valid[0]]
    ranked = {}
    for label, score in beside.values():
        s = np.asarray(score(block), dtype=np.float64)[0][block.valid[0]]
        ranked[label] = [graph.names[p] for p in cand[ranking(s, np.full(len(cand), node), cand, seed)[:k]]]
    if ranked:
        n = min(len(v) for v in ranked.values())
        parts.append((f"Per-entity baselines that can rank a {rel.src} without recorded {partner}s: their best {n}",
                      pl.DataFrame({"rank": np.arange(1, n + 1), **{label: v[:n] for label, v in ranked.items()}})))
    rows = [(graph.names[p], p, mark(p), gnn_rank.get(p)) for p in used]
    table = pl.DataFrame(rows, schema={partner: pl.String, "id": pl.Int64, "mark": pl.String, "GNN rank": pl.Int64},
                         orient="row")
    sims = "; ".join(f"{t} {j:.2f}" for t, j in zip(near["target"].to_list(), near["jaccard"].to_list()))
    parts.append((f"Recorded {partner}s of the {near.height} most similar known {rel.src}s "
                  f"(discover.compositions.similar_k={k_similar}; similarity: Jaccard index of the element sets, "
                  f"ties by the stoichiometry parsed from the names): {sims or 'none'}", table))
    return gnn_table, parts
