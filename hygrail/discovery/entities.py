"""Per-entity discovery (issue #28): the best partners of the entities a person names, and how well
each method ranks one entity's own candidates against what was found after a cutoff.

Why per entity: a chemist asks "which precursors for this target?", a clinician "which features
does this disease have?", not "which pairs of the whole space?"; the global ranking's head is a
few entities' pairs and says nothing about the rest. Each entity of ``discover.entities`` gets its
own list: its candidates (pairs with a node of the relation's other type that the candidate space
holds: known, not observed, not excluded; ``CandidateSpace.contains``) ranked by the discovery
GNN's logits, or by the stacked ranker (``discover.entity_ranker``, hygrail/discovery/stack.py; the
GNN's score, rank and band region beside), ties by ``space.tiebreak`` as every ranking of
discovery; the best ``discover.entity_k`` as a section of the report (``hypotheses.md``, ``index.html``;
``entity_page`` writes the sections).

Naming an entity (``resolve``): a node id (the ``left_id`` / ``right_id`` of the report's table), else a
source's own id where the loader keeps them (``KG.keys``: HPO's 'OMIM:154700', 'ORPHA:558',
'HP:0001166'; that node only, as a name written with its key), else, among the nodes of the relation's
two types, the exact name, else the name case-insensitively, else accent-free (Unicode NFKD, accents
dropped, casefolded: 'Alstrom syndrome' matches 'Alström syndrome'), else the name less a trailing
source key; each entity says how it matched (``Entity.matched``, on the page). Twins are one entity in several sources: nodes
of one type whose names agree once keys and accents are dropped, but not in case only (a chemical
formula: 'CO' is not 'Co'; HPO's 'MEND syndrome' / 'Mend syndrome' must be written exactly or by
id). HPO's loader appends " (<key>)" to a name several keys share, so 'Marfan syndrome' is 'Marfan
syndrome (OMIM:154700)' and 'Marfan syndrome (ORPHA:558)'; OMIM's 'Alstrom syndrome' is ORPHA's
'Alström syndrome'. A name gives each twin with edges as its own entity (a name written with its key
only that node); every entity carries its ``twins`` (their node ids), and ``known_on_twins`` gives
their partners, the answers the entity already has under another key: they are left out of its list,
with their ancestors in the ontology (``known_through_twins``: under the true-path rule a twin's
annotation implies every ancestor of it; ``KG.excluded`` already drops the ancestors of the entity's
own), read on the graph the space reads (the cut graph with a cutoff, where a twin's undated
annotations, all of HPO's ORPHA ones, are masked pairs: true, of unknown date, still left out), and
the section's heading counts them (issue #36: an ORPHA twin's feature came back as new). Measured on
whole HPO (2026-12-04): 57 of Marfan OMIM's 12,902 candidates are its ORPHA twin's 68 annotations or
their ancestors (61 of ORPHA's 12,906 the other way); at cutoff 2015 the same 57 of 9,393. A name of one
entity of each of the relation's types (BaTiO3, a Target and a Precursor) means the source type's, the
question asked of it (which precursors for this target?), and its section says how to ask for the
other: '<type>:<name>' ('Precursor:BaTiO3') names a node of that type only. A name held by several nodes
otherwise (two case variants of one type) or by none is a one-line DataError
listing the nodes it could mean or the closest names (difflib over the accent-free names less their
keys, each shown with its key and id) and how to quote a name on the command line: Hydra's override
grammar rejects an unquoted accent, parenthesis, apostrophe or semicolon
(``discover.entities=[Alström syndrome]`` stops in Hydra's lexer before discovery runs) and splits
at commas, so ``discover.entities='["Alström syndrome", "Marfan syndrome (OMIM:154700)"]'``. The
entities are resolved before any training, so a typo costs seconds. Every source entity's list at once:
``discover.entity_lists`` (kept by the scoring pass, ``scoring.Lists``; ``entity_lists.parquet``).

Cost: a query scores one entity's candidates (hundreds to thousands of pairs) with the model the
run has loaded. Measured on the synthetic MatKG at data.scale=1 (3,000 nodes; CHM-APL, R-GCN,
model cached; 2 cores shared, load average ~7; 2026-12-02): a CHM's top 20 of its 419 candidates
and an APL's of its 658 took 0.013 s each. The whole ``task=discover`` run naming both took 13.3 s
with ``discover.top_k=20`` (13.9 s with the default 1,000, whose evidence cards take 2.2 s): 10.2 s
to prepare (generate the KG, split it, load the model and encode the graph) and 3.0 s to score all
275,508 candidates. The query itself is far inside a 10 s budget; the run around it is not (13.3 s),
nearly all of that the preparation every discovery run pays. Each list's first
``discover.entity_cards`` (default 5) also get the ranked table's evidence cards (``ranked.entity_cards``)
and every row its verdict as the ranked table decides it: one evidence retrieval per card, the cost
the option bounds.

Retrospective (with ``discover.cutoff``; the rows, measures and lifts: ``entity_retro``): every entity of the
relation's source type that gains edges after the cutoff is ranked by each method over all of its candidates.
Methods: the GNN, TSH (``scoring.TSHBlocks``, fit on validation as in ``task=run``), the learned rankings a
cell adds (the stack's variants, the per-entity ranker) and the baselines of ``discover.entity_baselines``,
each a function of the graph, the space and ``discover.compatible``, naming no data set (``BASELINES``). All
read the cut graph (everything known at the cutoff), as the GNN and TSH do when they rank
(``discovery/run.py``'s module docstring); a new entity's rows read it with the entity's description
supplied (``Cold``, ``KG.describe``):

- ``popularity``: the candidate's degree over all edge types (how studied it is);
- ``relation_popularity``: its degree within the relation (how many targets use a precursor, how
  many diseases show a feature): the per-entity form of "hubs link next";
- ``compatible_popularity``: relation popularity among the candidates compatible with the entity,
  then the others: a candidate is compatible when each of its neighbours of type
  ``discover.compatible.via`` (not named in ``discover.compatible.ignore``) is a neighbour of the
  entity too. On the synthesis recipes (via: Element, ignore: O, C, H, N) that is a precursor
  every element of which, other than the anion-forming and volatile O, C, H and N, occurs in the
  target: the chemist's first filter, read from the static Target-Element / Precursor-Element
  edges (a material's composition, known from its first recorded year). A precursor of O, C, H, N only (H2O, NH4NO3 ...) is compatible
  with every target.
- ``paths3``: the number of 3-paths over the relation's own edges, (A·Aᵀ·A)[u, v]: u's partners'
  other sources' partners, the bipartite analogue of common neighbours (as ``method=paths3``,
  hygrail/baselines/structural.py).
- ``gbdt``: Science4Cast's learned baseline (hygrail/baselines/transitions.py): gradient-boosted
  trees over degree, growth, path and domain features, fit on the window before the cutoff (the
  graph at cutoff - h, labels its relation's edges new in (cutoff - h, cutoff]), applied to the
  cut graph.
- ``kge``: a PyKEEN knowledge-graph embedding trained on the cut graph (hygrail/baselines/kge.py,
  the optional extra ``kge``).
- ``name_cosine``, ``name_popularity``, ``cold_trees``: the name-aware baselines of a new entity
  (hygrail/baselines/coldstart.py): the names' cosine, blended with popularity, and trees fit on the
  earlier window's cold-start transitions (``cold_trees`` ranks the per-entity rows only).

Every baseline but ``paths3`` (which is there already) and ``cold_trees`` also ranks the whole space in the
retrospective tables (``whole_space_baselines``).

Beside the cold-start rows: the name-aware baselines (``baselines.coldstart``).

On the recipes ``all_at_10`` is the share of targets whose every future precursor is in the top
10. This is not He et al.'s success rate (Sci. Adv. 9, eadg8180, 2023: "when proposing five
precursor sets for each of 2,654 unseen test target materials", at least 82% succeed): they
propose whole precursor *sets*, and a target succeeds when one of five proposed sets matches a
reported recipe; here single precursors are ranked, a target's answers are only the precursors
first reported after the cutoff (those it already had by then are observed edges, not
candidates), and no set is checked to be a recipe. A list of 10 single precursors holding every
future one is neither harder nor easier in general than five sets holding one whole recipe.
"""

from __future__ import annotations

import difflib
import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from hygrail.baselines import coldstart
from hygrail.baselines.structural import relation_adjacency, relation_degree, structure
from hygrail.baselines.kge import LABEL as KGE_LABEL
from hygrail.baselines.kge import kge
from hygrail.baselines.transitions import LABEL as GBDT_LABEL
from hygrail.baselines.transitions import gbdt
from hygrail.discovery import entity_retro
from hygrail.discovery.entity_retro import LEARNED, RowHits
from hygrail.discovery.pools import WITH_TEXT
from hygrail.discovery.retro import Future
from hygrail.discovery.scoring import REGION_NAMES, GNNBlocks, TSHBlocks
from hygrail.discovery.space import Block, CandidateSpace, ranking
from hygrail.kg import KG, DataError
from hygrail.triage.routing import Band, route

Scorer = Callable[[Block], np.ndarray]  # an S x D array of ranking scores per block (higher first)


@dataclass(frozen=True)
class Entity:
    node: int
    name: str
    node_type: str
    twins: tuple[int, ...] = ()  # the other nodes of one entity named in several sources (``resolve``)
    relation: str = ""  # the relation it was named for (``known_on_twins`` reads its partners over it)
    also: tuple[int, ...] = ()  # nodes of the relation's other type its name also names (``resolve``)
    also_type: str = ""  # their type
    asked: str = field(default="", compare=False)  # what ``discover.entities`` said (``resolve``)
    matched: str = field(default="", compare=False)  # how it matched: 'source id', 'exact name', ... (``_node``)

    def __str__(self) -> str:
        return f"{self.node_type} '{self.name}' (id {self.node})"


# -- naming entities ------------------------------------------------------------------------------
# a name a loader made unique with its source key: "Marfan syndrome (OMIM:154700)" (hygrail/data/hpo.py)
_KEYED = re.compile(r"^(.+) \(([A-Za-z][\w.-]*:[^\s()]+)\)$")
_SOURCE_ID = re.compile(r"^[A-Za-z][\w.-]*:\S+$")  # a source's own id: 'OMIM:154700', 'HP:0001166'
# how a name matched (``_node``'s stages, in order), as the page says it
MATCHED = ("exact name", "name, case aside", "name, accents aside", "name less its source id")


def _fold(text: str) -> str:
    """A name as compared when no exact or case-insensitive one matches: accents stripped (Unicode
    NFKD, combining marks dropped), then casefolded: 'Alström' -> 'alstrom'."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


def _base(name: str) -> str:
    """The name without a trailing source key: 'Marfan syndrome (OMIM:154700)' -> 'Marfan syndrome'."""
    m = _KEYED.match(name)
    return m.group(1) if m else name


def _quoting(example: str) -> str:
    """How to write a name on the command line, where Hydra's override grammar rejects accents,
    parentheses and apostrophes and splits at commas before discovery reads it."""
    if "'" in example or '"' in example:
        example = "Alström syndrome"
    return (f"on the command line quote names with accents, parentheses or commas: "
            f"discover.entities='[\"{example}\"]'")


def resolve(space: CandidateSpace, given: Sequence) -> list[Entity]:
    """The nodes ``discover.entities`` names (module docstring), each known to ``space``; a name of
    twins (one entity in several sources) gives each twin with edges, in node order."""
    kg, rel = space.kg, space.relation
    types = list(dict.fromkeys((rel.src, rel.dst)))
    pool = np.concatenate([kg.nodes_of_type(t) for t in types])
    names = [kg.names[i] for i in pool]
    same: dict[tuple[str, str], list[int]] = {}  # (type, accent-free name less its key) -> nodes
    for i, n in zip(pool.tolist(), names):
        same.setdefault((kg.type_of(i), _fold(_base(n))), []).append(i)

    def twins(node: int) -> list[int]:
        """The node's twins: of its type, one name less keys and accents, not only a case variant
        (chemical formulas: 'CO' is not 'Co')."""
        name = kg.label(node)
        return [i for i in same[(kg.type_of(node), _fold(_base(name)))]
                if i != node and kg.label(i).casefold() != name.casefold()]

    known = np.union1d(space.src, space.dst)
    out = []
    for value in given:
        text, only = _typed(value, types)
        mine = pool if only == types else np.concatenate([kg.nodes_of_type(t) for t in only])
        nodes, also, how = _node(kg, text, only, mine, [kg.names[i] for i in mine], twins)
        other = kg.type_of(also[0]) if also else ""
        group = [Entity(i, kg.label(i), kg.type_of(i), tuple(twins(i)), rel.name, tuple(also), other, str(value).strip(),
                        how[i]) for i in nodes]
        kept = [e for e in group if e.node in known]
        if not kept:
            one = len(group) == 1
            what = group[0] if one else " and ".join(map(str, group)) + ", twins,"
            raise DataError(f"discover.entities: {what} {'has' if one else 'have'} no edges in the graph discovery "
                            f"reads (with a cutoff, none by then): {'it has' if one else 'they have'} no candidates to rank")
        out += kept
    return out


def _typed(value, types: list[str]) -> tuple[object, list[str]]:
    """(the name, the node types it may name): '<type>:<name>' names a node of that type only
    ('Precursor:BaTiO3'), anything else either of the relation's types."""
    if isinstance(value, str) and ":" in value:
        head, name = value.split(":", 1)
        if head.strip() in types:
            return name.strip(), [head.strip()]
    return value, types


def _node(kg: KG, value, types: list[str], pool: np.ndarray, names: list[str],
          twins: Callable[[int], list[int]]) -> tuple[list[int], list[int], dict[int, str]]:
    """(the node ``value`` names, with its twins unless named by id, source id or with its key; the
    nodes of the relation's other type the name also names; how each matched, for the page): a name of
    one node (or twins) of each type means the relation's source type, the question asked of it (a
    chemist's BaTiO3 is a Target: which precursors?), and the section says how to ask for the other
    (module docstring). A source id (``KG.keys``: 'OMIM:154700', 'HP:0001166', any case) names its node."""
    text = str(value).strip()
    wanted = " or ".join(types)
    if isinstance(value, int) or text.isdigit():  # a node id
        node = int(text)
        if not 0 <= node < kg.num_nodes:
            raise DataError(f"discover.entities: no node has id {node}; expected 0..{kg.num_nodes - 1}")
        if kg.type_of(node) not in types:
            raise DataError(f"discover.entities: id {node} is {kg.type_of(node)} '{kg.label(node)}'; expected a {wanted}")
        return [node], [], {node: "node id"}
    if _SOURCE_ID.match(text):
        keyed = [int(i) for i in pool if (kg.keys[i] or "").casefold() == text.casefold()]
        if keyed:
            return keyed[:1], [], {keyed[0]: "source id"}
        if any(kg.keys):  # the graph keeps source ids: a well-formed id it lacks is a one-line error
            like = next(kg.keys[int(i)] for i in pool if kg.keys[int(i)])
            raise DataError(f"discover.entities: no {wanted} has the id {text!r} in this graph (expected an id "
                            f"of its source such as {like}, a name or a node id)")
    folded = _fold(text)
    stages = (lambda n: n == text, lambda n: n.casefold() == text.casefold(), lambda n: _fold(n) == folded,
              lambda n: _fold(_base(n)) == folded)  # exact, case-insensitive, accent-free, less the source key
    for stage, same in zip(MATCHED, stages):
        hits = [int(i) for i, n in zip(pool, names) if same(n)]
        if not hits:
            continue
        first = [i for i in hits if kg.type_of(i) == types[0]]
        rest = [i for i in hits if kg.type_of(i) != types[0]]
        if first and rest and len(types) > 1:  # one name in both types: the source's, if each side is one entity
            own, other = sorted([first[0], *twins(first[0])]), sorted([rest[0], *twins(rest[0])])
            if set(first) <= set(own) and set(rest) <= set(other):
                chosen = first if len(first) == 1 and _KEYED.match(text) else own
                return chosen, rest, _told(chosen, hits, stage)
        group = sorted([hits[0], *twins(hits[0])])
        if len(hits) == 1 and _KEYED.match(text):  # one twin, named with its key
            return hits, [], _told(hits, hits, stage)
        if set(hits) <= set(group):  # one node, or twins: one entity in several sources
            return group, [], _told(group, hits, stage)
        nodes = ", ".join(str(Entity(i, kg.label(i), kg.type_of(i))) for i in hits)
        raise DataError(f"discover.entities: {text!r} names {len(hits)} nodes: {nodes}; give one by its id")
    by_base: dict[str, list[int]] = {}  # twins share a key: a near miss of 'Marfan syndrome' shows both
    for i, n in zip(pool.tolist(), names):
        by_base.setdefault(_fold(_base(n)), []).append(i)
    close = [i for c in difflib.get_close_matches(folded, list(by_base), n=5) for i in by_base[c]]
    raise DataError(f"discover.entities: no {wanted} is named {text!r}; closest: "
                    + (", ".join(str(Entity(i, kg.label(i), kg.type_of(i))) for i in close) if close else "none")
                    + f" ({_quoting(kg.label(close[0]) if close else text)})")


def _told(nodes: list[int], hits: list[int], stage: str) -> dict[int, str]:
    """How each of ``nodes`` matched: by ``stage`` itself, or as the twin of a node that did."""
    return {i: stage if i in hits else f"{stage} of its twin" for i in nodes}


def known_on_twins(kg: KG, entity: Entity) -> set[int]:
    """The partners ``entity``'s twins have in ``kg`` over the relation it was named for (nodes of
    the relation's other type): answers already known for the same disease under another source key."""
    if not entity.twins:
        return set()
    rel, want = _partner_type(kg, entity)
    etype = kg.schema.edge_type(rel.src, rel.dst)
    code = kg.edge_types.index(etype) if etype in kg.edge_types else -1
    out: set[int] = set()
    for twin in entity.twins:
        partners, edges = kg.neighbors(twin)
        keep = (kg.edge_type_ids[edges] == code) & (kg.node_types[partners] == want)
        out.update(partners[keep].tolist())
    return out


# -- the per-entity lists -----------------------------------------------------------------------------
@dataclass
class EntityList:
    entity: Entity
    table: pl.DataFrame  # rank, partner, id, score, [gnn_score, gnn_rank,] region, future_year (best entity_k)
    candidates: int  # how many candidates the entity has (less those known on a twin or implied by them)
    seconds: float  # to rank them
    on_twins: int = 0  # candidates left out: annotated on a twin (``known_on_twins``)
    implied_by_twins: int = 0  # candidates left out: ancestors of a twin's annotations (true-path rule)
    cards: pl.DataFrame | None = None  # evidence cards of the first ``discover.entity_cards`` (cards.COLUMNS)
    # (heading, table or None) after the list: what the graph records for it, a new composition's
    # baselines and similar targets (hygrail/discovery/compositions.py)
    parts: list[tuple[str, pl.DataFrame | None]] = field(default_factory=list)
    ranker: str = "GNN"  # what ordered the list (``score``); other than the GNN: ``gnn_score``, ``gnn_rank`` beside
    choice: str = ""  # why this list (``discover.entity_ranker=ltr``: the pre-cutoff check's figures), for the page


def entity_pairs(space: CandidateSpace, entity: Entity) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate of the space that has ``entity`` at one end, as (src, dst), destination order."""
    own_src = entity.node_type == space.relation.src
    others = space.dst if own_src else space.src
    mine = np.full(len(others), entity.node, dtype=np.int64)
    src, dst = (mine, others) if own_src else (others, mine)
    if space.same_type:
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    keep = space.contains(src, dst)
    return src[keep], dst[keep]


def _partner_type(kg: KG, entity: Entity):
    """(the relation ``entity`` was named for, the index of its partners' node type)."""
    rel = kg.schema.relations.get(entity.relation) if entity.relation else None
    if rel is None:
        raise ValueError(f"{entity}: known_on_twins needs the relation it was named for (resolve sets it)")
    return rel, kg.schema.node_types.index(rel.dst if entity.node_type == rel.src else rel.src)


def known_through_twins(kg: KG, entity: Entity) -> tuple[set[int], set[int]]:
    """(on twins, implied): the partners ``entity``'s twins have in ``kg`` (``known_on_twins``) or
    as masked pairs (``KG.masked``: with a cutoff, the undated annotations ``KG.until`` withholds,
    e.g. every ORPHA annotation of HPO; true links of unknown date, as for the entity's own), and
    the proper ancestors of those partners in ``kg.ancestors`` (HPO's is_a closure) that are not
    partners of a twin themselves. Under the true-path rule a twin's annotation implies each
    ancestor of it for the one disease both twins name; ``KG.excluded`` already drops the
    ancestors of the entity's own annotations, not of its twins'."""
    on = known_on_twins(kg, entity)
    if entity.twins and kg.masked.height:  # masked pairs carry no edge type: the partner's node type decides
        u, v, twins = kg.masked["u"].to_numpy(), kg.masked["v"].to_numpy(), np.array(entity.twins)
        partners = np.concatenate([v[np.isin(u, twins)], u[np.isin(v, twins)]])
        on |= set(partners[kg.node_types[partners] == _partner_type(kg, entity)[1]].tolist())
    if not on or kg.ancestors is None:
        return on, set()
    up = kg.ancestors[np.fromiter(on, dtype=np.int64, count=len(on))]
    return on, set(np.unique(up.indices).tolist()) - on


def rank_entity(space: CandidateSpace, gnn: GNNBlocks, band: Band, entity: Entity, k: int, seed: int,
                future_years: Mapping[tuple[int, int], int] | None = None,
                ranker: tuple[str, Callable] | None = None) -> EntityList:
    """The ``k`` best candidates of ``entity`` by GNN logit, with their score and band region.
    Partners known on a twin, or implied by a twin's annotation (``known_through_twins``), on the
    graph the space reads (the cut graph with a cutoff), are left out: they are known for the
    disease, not new; the section's heading counts them. ``ranker``: (label, log-odds of pairs) to
    rank by instead (``discover.entity_ranker``, e.g. the stack's ``StackFit.pair_scorer``); the
    table then keeps the GNN's probability and rank beside, and the region stays the GNN's (the band
    is calibrated on the GNN's scores); a third item, why this list, goes to the page. ``gnn`` None (a first
    answer before the GNN is trained): the ``ranker``'s order alone, without the GNN's columns."""
    t0 = time.perf_counter()
    src, dst = entity_pairs(space, entity)
    on, implied = known_through_twins(space.kg, entity)
    partner = np.where(src == entity.node, dst, src)
    on_twin = np.isin(partner, np.array(sorted(on), dtype=np.int64))
    by_twin = np.isin(partner, np.array(sorted(implied), dtype=np.int64))
    n_on, n_implied = int(on_twin.sum()), int(by_twin.sum())
    src, dst = src[~(on_twin | by_twin)], dst[~(on_twin | by_twin)]
    logits = None if gnn is None else gnn.pairs(src, dst)
    label, by = ("GNN", logits) if ranker is None else (ranker[0], np.asarray(ranker[1](src, dst), dtype=np.float64))
    choice = ranker[2] if ranker is not None and len(ranker) > 2 else ""
    top = ranking(by, src, dst, seed)[:k]
    s, d = src[top], dst[top]
    partner = np.where(s == entity.node, d, s)
    years = [None if future_years is None else future_years.get(p) for p in zip(s.tolist(), d.tolist())]
    columns = {"rank": np.arange(1, len(top) + 1), "partner": [space.kg.label(p) for p in partner], "id": partner}
    if gnn is None:
        columns |= {"score": 1.0 / (1.0 + np.exp(-by[top])), "future_year": pl.Series(years, dtype=pl.Int32)}
        return EntityList(entity, pl.DataFrame(columns), len(src), time.perf_counter() - t0, n_on, n_implied,
                          ranker=label, choice=choice)
    gnn_score = gnn.probability(logits[top])
    if ranker is None:
        columns["score"] = gnn_score
    else:
        gnn_rank = np.empty(len(src), dtype=np.int64)
        gnn_rank[ranking(logits, src, dst, seed)] = np.arange(1, len(src) + 1)
        columns |= {"score": 1.0 / (1.0 + np.exp(-by[top])), "gnn_score": gnn_score, "gnn_rank": gnn_rank[top]}
    columns |= {"region": [REGION_NAMES[int(r)] for r in route(gnn_score, band)],
                "future_year": pl.Series(years, dtype=pl.Int32)}
    return EntityList(entity, pl.DataFrame(columns), len(src), time.perf_counter() - t0, n_on, n_implied, ranker=label,
                      choice=choice)


# -- per-entity baselines (module docstring) --------------------------------------------------------
def popularity(graph: KG, space: CandidateSpace, options: Mapping) -> Scorer:
    pop = graph.degree[space.dst].astype(np.float64)
    return lambda block: np.broadcast_to(pop, block.valid.shape)


def relation_popularity(graph: KG, space: CandidateSpace, options: Mapping) -> Scorer:
    pop = relation_degree(graph, space.relation)[space.dst]
    return lambda block: np.broadcast_to(pop, block.valid.shape)


def compatible_popularity(graph: KG, space: CandidateSpace, options: Mapping) -> Scorer:
    via, ignore = options.get("via"), set(options.get("ignore") or ())
    if via not in graph.schema.node_types:
        raise DataError(f"discover.compatible.via={via!r}: compatible_popularity needs the node type whose "
                        f"neighbours must match; expected one of {list(graph.schema.node_types)}")
    # an ignored name the graph lacks (a subgraph without N) has nothing to ignore
    nodes = np.array([i for i in graph.nodes_of_type(via) if graph.names[i] not in ignore], dtype=np.int64)
    has = structure(graph)[:, nodes].tocsr()  # node x via-node, 0/1
    need = has[space.dst]
    n_need = np.asarray(need.sum(axis=1)).ravel()
    pop = relation_degree(graph, space.relation)[space.dst]
    first = pop.max(initial=0.0) + 1.0  # every compatible candidate before every other one

    def score(block: Block) -> np.ndarray:
        shared = (has[block.src] @ need.T).toarray()
        return pop[None, :] + first * (shared == n_need[None, :])

    return score


def paths3(graph: KG, space: CandidateSpace, options: Mapping) -> Scorer:
    r = relation_adjacency(graph, space.relation)
    to_dst = r[:, space.dst].tocsc()
    return lambda block: ((r[block.src] @ r) @ to_dst).toarray()


def common_neighbours(graph: KG, space: CandidateSpace, options: Mapping) -> Scorer:
    """Shared neighbours over every edge type (``method=cn``'s block form, for the whole space)."""
    a = structure(graph)
    to_dst = a[:, space.dst].tocsc()
    return lambda block: (a[block.src] @ to_dst).toarray()


# name -> (row label, the scorer's factory)
BASELINES: dict[str, tuple[str, Callable[[KG, CandidateSpace, Mapping], Scorer]]] = {
    "popularity": ("Popularity (all edges)", popularity),
    "relation_popularity": ("Popularity (relation)", relation_popularity),
    "compatible_popularity": ("Compatible popularity", compatible_popularity),
    "paths3": ("3-paths", paths3),
    "gbdt": (GBDT_LABEL, gbdt),  # Science4Cast's learned baseline, fit on the window before the cutoff
    "kge": (KGE_LABEL, kge),  # PyKEEN RotatE on the cut graph (the optional extra kge)
    # name-aware (issue #45): the names' cosine, blended with popularity, trees on earlier cold-start transitions
    **{k: (coldstart.LABELS[k], getattr(coldstart, k)) for k in ("name_cosine", "name_popularity", "cold_trees")},
}
COLD_ONLY = ("cold_trees",)  # fit on sources new in a window: a cold-start baseline, not one of the whole space
# An embedding per node trained on the cut graph: it cannot read a description supplied later (``Cold``), so a new
# entity keeps the embedding it was given untrained (its rows reuse the cut graph's model, not one refit on the
# described graph).
TRANSDUCTIVE = ("kge",)


def whole_space_baselines(d: Mapping) -> list[str]:
    """The ``discover.entity_baselines`` that also rank the whole space in the retrospective tables
    (3-paths is there already, as ``method=paths3``)."""
    return [b for b in dict.fromkeys(d.get("entity_baselines") or []) if b != "paths3" and b not in COLD_ONLY]


def baseline_options(d: Mapping) -> dict:
    """What a baseline factory reads: ``discover.compatible``'s keys, the cutoff and the horizon
    (the learned baselines fit on the window before the cutoff)."""
    from hygrail.discovery.retro import headline

    horizon = headline(d["horizons"], d["min_degrees"], d["min_counts"])[0]
    return dict(d.get("compatible") or {}) | {"cutoff": d.get("cutoff"), "horizon": horizon,
                                               "seed": d.get("seed", 0), "kge": d.get("kge"),
                                               "names_model": (d.get("tsh") or {}).get("embedding_model")}


# -- the report's part ---------------------------------------------------------------------------------
@dataclass
class EntityReport:
    lists: list[EntityList]
    partner_type: dict[str, str]  # entity node type -> the display name of its partners' type
    retro: pl.DataFrame | None = None  # one row per method (cutoff only)
    note: str = ""  # what the retrospective rows are over
    metrics: dict[str, float] | None = None
    each: pl.DataFrame | None = None  # one row per evaluated entity: its row, answers, degree, each method's hits@10 (``per_entity``)


def options(d: Mapping, space: CandidateSpace) -> list[Entity]:
    """``discover.entit*`` checked (one-line errors naming the option) and the entities resolved."""
    k, ks = d.get("entity_k"), d.get("entity_ks") or []
    if not isinstance(k, int) or k < 1:
        raise DataError(f"discover.entity_k={k}: expected a positive number of candidates per entity")
    if not ks or not all(isinstance(x, int) and x >= 1 for x in ks):
        raise DataError(f"discover.entity_ks={ks}: expected positive list sizes")
    cards = d.get("entity_cards", 0)
    if not isinstance(cards, int) or isinstance(cards, bool) or not 0 <= cards <= k:
        raise DataError(f"discover.entity_cards={cards!r}: expected a number of evidence cards per entity from 0 to "
                        f"discover.entity_k={k}")
    unknown = [b for b in d.get("entity_baselines") or [] if b not in BASELINES]
    if unknown:
        raise DataError(f"discover.entity_baselines: unknown {unknown}; expected some of {list(BASELINES)}")
    return resolve(space, d.get("entities") or [])


def list_for(ranker, space: CandidateSpace, entity: Entity) -> tuple[str, Callable] | None:
    """What orders ``entity``'s list: ``ranker`` itself, or, given per population (``discover.entity_ranker=ltr``:
    population -> (label, scorer)), the one of the entity's population in the graph the list is read from."""
    if not isinstance(ranker, Mapping):
        return ranker
    return ranker["known" if space.kg.known[entity.node] else "cold"]


@dataclass(frozen=True)
class Cold:
    """How the new entities of the retrospective are ranked: their space over the cut graph with their
    descriptions supplied (``KG.describe``: a new material's composition, as a user would give it), the
    GNN's block scores over it, and the other learned rankings over it (key -> (label, scorer), as
    ``entity_report``'s ``extra``)."""

    space: CandidateSpace
    gnn_block: Scorer
    extra: Mapping[str, tuple[str, Scorer]] = field(default_factory=dict)


def entity_report(d: Mapping, wanted: Sequence[Entity], space: CandidateSpace, gnn: GNNBlocks, band: Band, split,
                  future: Future | None, seed: int, gnn_block: Scorer | None = None,
                  extra: Mapping[str, tuple[str, Scorer]] | None = None,
                  ranker: tuple[str, Callable] | None = None, known: Mapping[str, RowHits] | None = None,
                  cold: Cold | None = None) -> EntityReport | None:
    """The lists of ``wanted`` and (with a cutoff) the per-entity retrospective evaluation
    (``entity_retro.evaluate``); None when there is neither. ``gnn_block``: the GNN's block scorer for
    the evaluation (default ``gnn``; a ``stack.Memo`` shares it with a stack); ``extra``: more learned
    rankings, key -> (label, scorer), evaluated and lifted like the GNN (``discover.stack``,
    ``discover.entity_ranker``); ``ranker``: what orders the lists (``rank_entity``; None: the GNN; per
    population: ``list_for``);
    ``known``: row -> the known rows' hits already counted on the whole-space vectors (``RowHits``),
    for the methods they hold; ``cold``: how the new entities are ranked (default: as the known ones,
    when no description was withheld, e.g. a disease given by its name)."""
    if not wanted and future is None:
        return None
    schema = space.kg.schema
    rel = space.relation
    years = None if future is None else dict(zip(zip(future.src.tolist(), future.dst.tolist()), future.year.tolist()))
    lists = [rank_entity(space, gnn, band, e, int(d["entity_k"]), seed, years, list_for(ranker, space, e))
             for e in wanted]
    report = EntityReport(lists, {rel.src: schema.display_name(rel.dst), rel.dst: schema.display_name(rel.src)},
                          metrics={f"discover_entity_seconds_{i}": e.seconds for i, e in enumerate(lists)})
    if future is None:
        return report
    ks, names = sorted(int(k) for k in d["entity_ks"]), list(dict.fromkeys(d.get("entity_baselines") or []))
    extra = dict(extra or {})
    learned = LEARNED | {k: label for k, (label, _) in extra.items()}
    labels = learned | {b: BASELINES[b][0] for b in names}

    def scorers_of(where: CandidateSpace, gnn_scores: Scorer, more: Mapping, skip=()) -> dict:
        """Every ranking of the rows over ``where``'s graph (the cut graph, or it with descriptions supplied)."""
        return {"gnn": gnn_scores, "tsh": TSHBlocks(split, d["tsh"], where), **{k: s for k, (_, s) in more.items()},
                **{b: BASELINES[b][1](where.kg, where, baseline_options(d)) for b in names if b not in skip}}

    scorers = scorers_of(space, gnn_block or gnn, extra)
    cold_space = cold_scorers = None
    if cold is not None:
        cold_space = cold.space
        cold_scorers = scorers_of(cold.space, cold.gnn_block, {k: cold.extra.get(k, v) for k, v in extra.items()},
                                  TRANSDUCTIVE)
        cold_scorers |= {b: scorers[b] for b in TRANSDUCTIVE if b in scorers}
    horizon = int(baseline_options(d)["horizon"])
    found = entity_retro.evaluate(space, scorers, labels, learned, future, int(d["cutoff"]), horizon, ks, seed,
                                  int(d["block_pairs"]), known, cold_space, cold_scorers, horizon_only=WITH_TEXT)
    report.retro, report.each, report.note = found.retro, found.each, found.note
    report.metrics |= found.metrics
    return report
