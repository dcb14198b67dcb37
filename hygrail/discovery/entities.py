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

Retrospective (``found_at``, ``summarise``, with ``discover.cutoff``): every entity of the relation's source type
that gains edges after the cutoff (a known entity's answers: the future edges between nodes known by then,
``retro.future_edges``, at any year after the cutoff; a new entity's: below); each method ranks all of that entity's
candidates; hits@k (some answer in the top k) and recall@k (the share of its answers there) at
``discover.entity_ks`` (1, 5, 10), and all@10 (every answer in the top 10), are averaged over those
entities, with standard errors (sample standard deviation / sqrt(n)). A known entity's candidates are
a run of the whole-space list, so with the retrospective tables its ranks are counted on the vectors
they rank (``RowHits``); a new entity's row is scored here (``found_at``). Methods: the GNN, TSH
(``scoring.TSHBlocks``, fit on validation as in ``task=run``) and the baselines of
``discover.entity_baselines``, each a function of the graph, the space and ``discover.compatible``,
naming no data set (``BASELINES``). All read the cut graph (everything known at the cutoff), as
the GNN and TSH do when they rank (``discovery/run.py``'s module docstring):

- ``popularity``: the candidate's degree over all edge types (how studied it is);
- ``relation_popularity``: its degree within the relation (how many targets use a precursor, how
  many diseases show a feature): the per-entity form of "hubs link next";
- ``compatible_popularity``: relation popularity among the candidates compatible with the entity,
  then the others: a candidate is compatible when each of its neighbours of type
  ``discover.compatible.via`` (not named in ``discover.compatible.ignore``) is a neighbour of the
  entity too. On the synthesis recipes (via: Element, ignore: O, C, H, N) that is a precursor
  every element of which, other than the anion-forming and volatile O, C, H and N, occurs in the
  target: the chemist's first filter, read from the static Target-Element / Precursor-Element
  edges (known at any cutoff). A precursor of O, C, H, N only (H2O, NH4NO3 ...) is compatible
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

``lift``: the paired difference of hits@k (k = 10) between each learned ranking (the GNN, TSH, the
stack's variants) and the best other ranking of its row, entity by entity, with its standard error:
the best by mean hits@k of every ranking of another family (``family``: the stack's variants are not
each other's baselines), learned ones included (issue #45: TSH and the GNN alone had been left out
of "best baseline"). The rows: entities known at the cutoff; entities first linked within the
horizon after it, on their answers within it (``retro.Future.new_within``: the cold-start task as a
user meets it); and, labelled apart, every entity first linked after the cutoff on answers of any
later year. Beside the cold-start rows the name-aware baselines (``baselines.coldstart``) and how
much the stack leans on names (``name_reliance``).

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
import scipy.sparse as sp
from tqdm import tqdm

from hygrail.baselines import coldstart
from hygrail.baselines.structural import relation_adjacency, structure
from hygrail.baselines.kge import LABEL as KGE_LABEL
from hygrail.baselines.kge import kge
from hygrail.baselines.transitions import LABEL as GBDT_LABEL
from hygrail.baselines.transitions import gbdt
from hygrail.discovery.retro import Future
from hygrail.discovery.scoring import REGION_NAMES, GNNBlocks, TSHBlocks
from hygrail.discovery.space import Block, CandidateSpace, ranking, row_bounds, tiebreak
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
    is calibrated on the GNN's scores). ``gnn`` None (a first answer before the GNN is trained): the
    ``ranker``'s order alone, without the GNN's columns."""
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
    top = ranking(by, src, dst, seed)[:k]
    s, d = src[top], dst[top]
    partner = np.where(s == entity.node, d, s)
    years = [None if future_years is None else future_years.get(p) for p in zip(s.tolist(), d.tolist())]
    columns = {"rank": np.arange(1, len(top) + 1), "partner": [space.kg.label(p) for p in partner], "id": partner}
    if gnn is None:
        columns |= {"score": 1.0 / (1.0 + np.exp(-by[top])), "future_year": pl.Series(years, dtype=pl.Int32)}
        return EntityList(entity, pl.DataFrame(columns), len(src), time.perf_counter() - t0, n_on, n_implied,
                          ranker=label)
    gnn_score = gnn.probability(logits[top])
    if ranker is None:
        columns["score"] = gnn_score
    else:
        gnn_rank = np.empty(len(src), dtype=np.int64)
        gnn_rank[ranking(logits, src, dst, seed)] = np.arange(1, len(src) + 1)
        columns |= {"score": 1.0 / (1.0 + np.exp(-by[top])), "gnn_score": gnn_score, "gnn_rank": gnn_rank[top]}
    columns |= {"region": [REGION_NAMES[int(r)] for r in route(gnn_score, band)],
                "future_year": pl.Series(years, dtype=pl.Int32)}
    return EntityList(entity, pl.DataFrame(columns), len(src), time.perf_counter() - t0, n_on, n_implied, ranker=label)


# -- per-entity baselines (module docstring) --------------------------------------------------------
def relation_degree(graph: KG, space: CandidateSpace) -> np.ndarray:
    """Each node's number of partners in the relation (float64, per node id)."""
    return np.diff(relation_adjacency(graph, space.relation).indptr).astype(np.float64)


def popularity(graph: KG, space: CandidateSpace, options: Mapping) -> Scorer:
    pop = graph.degree[space.dst].astype(np.float64)
    return lambda block: np.broadcast_to(pop, block.valid.shape)


def relation_popularity(graph: KG, space: CandidateSpace, options: Mapping) -> Scorer:
    pop = relation_degree(graph, space)[space.dst]
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
    pop = relation_degree(graph, space)[space.dst]
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
LEARNED = {"gnn": "GNN", "tsh": "TSH"}
# The per-entity table's rows: entities known at the cutoff (they have a dated edge: the whole space's
# sources); entities first linked within the horizon after it, on their answers within it (the cold-start
# task as a user meets it: a disease curated since the cutoff); and, labelled apart, entities first linked at
# any later year on answers of any later year (the row issue #45 found counted as cold start before).
KNOWN_ROW = "known at the cutoff"
NEW_ROW = "new: first linked within the horizon"
NEW_ANY_ROW = "new: first linked at any later year (any-year answers)"


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


# -- retrospective per-entity metrics --------------------------------------------------------------
def found_at(space: CandidateSpace, scorers: Mapping[str, Scorer], future_src: np.ndarray, future_dst: np.ndarray,
             ks: Sequence[int], seed: int, block_pairs: int) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(entities, answers per entity, method -> (entities x ks) answers in its top k): each source
    entity with future answers (src[i], dst[i]), all of its candidates ranked by each method (ties
    by ``tiebreak``, as ``space.ranking``)."""
    if space.same_type:
        raise DataError(f"relation {space.relation.name}: the per-entity evaluation needs a relation between two "
                        f"node types (each entity's candidates are one row of the space)")
    n = space.kg.num_nodes
    answers = sp.csr_matrix((np.ones(len(future_src)), (future_src, future_dst)), shape=(n, n))
    sources = np.unique(future_src)
    cols = np.minimum(np.asarray(ks), len(space.dst)) - 1
    found = {name: [] for name in scorers}
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
            found[name].append(hit)
    n_answers = np.asarray(answers[sources].sum(axis=1)).ravel()
    return sources, n_answers, {name: np.concatenate(f) if f else np.zeros((0, len(ks))) for name, f in found.items()}


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
        self.sources, first, self.n_answers = np.unique(owner, return_index=True, return_counts=True)
        self.first = np.r_[first, len(pos)]
        self.lo, self.hi = row_bounds(src_all, self.sources)
        self.cols = np.minimum(np.asarray(ks), n_dst) - 1
        self.found: dict[str, np.ndarray] = {}

    def add(self, name: str, scores: np.ndarray) -> None:
        """Count the answers' ranks in their rows of ``scores`` (every candidate, walk order)."""
        hit = np.zeros((len(self.sources), len(self.cols)), dtype=np.int64)
        for i in range(len(self.sources)):
            lo, hi = self.lo[i], self.hi[i]
            at = self.pos[self.first[i] : self.first[i + 1]]
            rank = place_in_row(scores[lo:hi], scores[at][:, None], lambda: self._ties(lo, hi, at))
            hit[i] = np.count_nonzero(rank[:, None] <= self.cols[None, :], axis=0)
        self.found[name] = hit

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


def per_entity(space: CandidateSpace, sources: np.ndarray, n_answers: np.ndarray, found: Mapping[str, np.ndarray],
               labels: Mapping[str, str], ks: Sequence[int], row: str) -> pl.DataFrame:
    """One row per entity of ``found_at``: its name, ``row`` (known or new), answers, its relation
    degree and all-edge degree in the cut graph, and whether each method has an answer in its top 10
    (else the largest k): where a ranking loses per entity, and to what (``bench/error_analysis.py``)."""
    j = _at_10(ks)
    kg = space.kg
    return pl.DataFrame({"id": sources, "entity": [kg.label(int(u)) for u in sources], "entities known": row,
                         "answers": n_answers.astype(np.int64),
                         "relation_degree": relation_degree(kg, space)[sources].astype(np.int64),
                         "degree": np.asarray(kg.degree)[sources]}
                        | {f"hits@{ks[j]} {labels[m]}": (f[:, j] > 0).astype(np.int8) for m, f in found.items()})


def _at_10(ks: Sequence[int]) -> int:
    """The index of k = 10 in ``ks`` (else of the largest k): the list size the lifts compare at."""
    return list(ks).index(10) if 10 in ks else len(ks) - 1


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def summarise(n_answers: np.ndarray, found: Mapping[str, np.ndarray], labels: Mapping[str, str],
              ks: Sequence[int]) -> pl.DataFrame:
    """One row per method: hits@k and recall@k at each k, all@k at the largest k <= 10 (means over
    entities) and their standard errors."""
    j_all = max((j for j, k in enumerate(ks) if k <= 10), default=0)
    rows = []
    for name, f in found.items():
        row = {"method": labels[name], "entities": len(n_answers)}
        parts = [("hits", j, f[:, j] > 0) for j in range(len(ks))] + \
                [("recall", j, f[:, j] / n_answers) for j in range(len(ks))] + [("all", j_all, f[:, j_all] == n_answers)]
        for metric, j, values in parts:
            row[f"{metric}_at_{ks[j]}"], row[f"{metric}_at_{ks[j]}_se"] = _mean_se(values)
        rows.append(row)
    return pl.DataFrame(rows)


def family(method: str) -> str:
    """The methods that are one ranking's variants (the stack's), whose margins are never taken
    against each other: a margin is against the best ranking of another family."""
    return "stack" if method.startswith("stack_") else method


def lift(found: Mapping[str, np.ndarray], ks: Sequence[int], learned: Mapping[str, str] = LEARNED
         ) -> tuple[dict[str, str], int, dict]:
    """(each ``learned`` method's best other ranking by hits@k, k, metrics): k = 10 (else the largest
    k); for each ``learned`` method the paired difference of hits@k, entity by entity, against the best
    by mean hits@k of every ranking in ``found`` outside its own ``family`` (learned ones included:
    TSH, the GNN alone, the trees), with its standard error."""
    j = _at_10(ks)
    hits = {name: (f[:, j] > 0).astype(np.float64) for name, f in found.items()}
    best, out = {}, {}
    for m in learned:
        others = [o for o in found if family(o) != family(m)]
        if m not in hits or not others:
            continue
        best[m] = max(others, key=lambda o: hits[o].mean())
        out[f"{m}_lift_hits_at_{ks[j]}"], out[f"{m}_lift_hits_at_{ks[j]}_se"] = _mean_se(hits[m] - hits[best[m]])
    return best, int(ks[j]), out


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


def entity_report(d: Mapping, wanted: Sequence[Entity], space: CandidateSpace, gnn: GNNBlocks, band: Band, split,
                  future: Future | None, seed: int, gnn_block: Scorer | None = None,
                  extra: Mapping[str, tuple[str, Scorer]] | None = None,
                  ranker: tuple[str, Callable] | None = None, known: RowHits | None = None) -> EntityReport | None:
    """The lists of ``wanted`` and (with a cutoff) the per-entity retrospective evaluation; None
    when there is neither. ``gnn_block``: the GNN's block scorer for the evaluation (default
    ``gnn``; a ``stack.Memo`` shares it with a stack); ``extra``: more learned rankings, key ->
    (label, scorer), evaluated and lifted like the GNN (``discover.stack``); ``ranker``: what orders
    the lists (``rank_entity``; None: the GNN); ``known``: the known row's hits already counted on the
    whole-space vectors (``RowHits``), for the methods it holds."""
    if not wanted and future is None:
        return None
    schema = space.kg.schema
    rel = space.relation
    years = None if future is None else dict(zip(zip(future.src.tolist(), future.dst.tolist()), future.year.tolist()))
    lists = [rank_entity(space, gnn, band, e, int(d["entity_k"]), seed, years, ranker) for e in wanted]
    report = EntityReport(lists, {rel.src: schema.display_name(rel.dst), rel.dst: schema.display_name(rel.src)},
                          metrics={f"discover_entity_seconds_{i}": e.seconds for i, e in enumerate(lists)})
    if future is None:
        return report
    ks, names = sorted(int(k) for k in d["entity_ks"]), list(dict.fromkeys(d.get("entity_baselines") or []))
    graph = space.kg  # the cut graph: everything known at the cutoff (run.py's module docstring)
    extra = dict(extra or {})
    learned = LEARNED | {k: label for k, (label, _) in extra.items()}
    scorers = {"gnn": gnn_block or gnn, "tsh": TSHBlocks(split, d["tsh"], space),
               **{k: s for k, (_, s) in extra.items()},
               **{b: BASELINES[b][1](graph, space, baseline_options(d)) for b in names}}
    labels = learned | {b: BASELINES[b][0] for b in names}
    if known is not None:  # the rest, if any, ranked here
        rest = {k: v for k, v in scorers.items() if k not in known.found}
        sources, n_answers, found = known.sources, known.n_answers, dict(known.found)
        if rest:
            found |= found_at(space, rest, future.src, future.dst, ks, seed, int(d["block_pairs"]))[2]
        found = {k: found[k] for k in scorers}
    else:
        sources, n_answers, found = found_at(space, scorers, future.src, future.dst, ks, seed, int(d["block_pairs"]))
    if not len(sources):
        return report
    report.retro, report.each = _rows(found, sources, n_answers, space, labels, learned, ks, KNOWN_ROW)
    report.metrics |= {"retro_entity_sources": float(len(sources)), "retro_entity_answers": float(n_answers.sum())}
    report.metrics |= _row_metrics("retro_entity_", report.retro, found, learned, ks)
    note = [f"{len(sources):,} {schema.display_name(rel.src)} entities gain {int(n_answers.sum()):,} {rel.label} edges "
            f"after the cutoff (between nodes known by then); each method ranks all of an entity's candidates; mean ± "
            f"standard error over the entities. 'lift': the paired hits@10 difference against the best other ranking "
            f"of the row (every ranking but the method's own variants)."]
    best, k, gains = lift(found, ks, learned)
    if best:
        note.append(f"Paired hits@{k} lift against the best other ranking: " + "; ".join(
            f"{label} {gains[f'{m}_lift_hits_at_{k}']:+.3f} ± {gains[f'{m}_lift_hits_at_{k}_se']:.3f} (vs {labels[best[m]]})"
            for m, label in learned.items() if m in best) + ".")
    if len(future.new_src):  # the cold-start rows: entities first linked after the cutoff, given by name / composition
        horizon, cutoff = int(baseline_options(d)["horizon"]), int(d["cutoff"])
        within = future.new_within(cutoff, horizon)
        for row, prefix, keep in ((NEW_ROW, "retro_entity_new_", within),
                                  (NEW_ANY_ROW, "retro_entity_new_any_", np.ones(len(within), dtype=bool))):
            if not keep.any():
                continue
            new, n_new, found_new = found_at(space, scorers, future.new_src[keep], future.new_dst[keep], ks, seed,
                                             int(d["block_pairs"]))
            rows, each = _rows(found_new, new, n_new, space, labels, learned, ks, row)
            report.retro, report.each = pl.concat([report.retro, rows], how="diagonal"), pl.concat([report.each, each])
            report.metrics |= _row_metrics(prefix, rows, found_new, learned, ks)
            report.metrics |= {f"{prefix}sources": float(len(new)), f"{prefix}answers": float(n_new.sum())}
        if "retro_entity_new_sources" in report.metrics:
            note.append(f"Rows '{NEW_ROW}': {int(report.metrics['retro_entity_new_sources']):,} entities unknown at the "
                        f"cutoff and first linked within {horizon} years of it, scored on their "
                        f"{int(report.metrics['retro_entity_new_answers']):,} answers within those years: the cold-start "
                        f"task as a user meets it, where the entity is given by its name or composition.")
        note.append(f"Rows '{NEW_ANY_ROW}': every entity first linked after the cutoff, whenever, on answers of any "
                    f"later year (a different task: most of them were curated years later).")
        reliance = name_reliance(report.retro)
        if reliance:
            note.append(reliance)
    report.note = " ".join(note)
    return report


def _rows(found: Mapping[str, np.ndarray], sources: np.ndarray, n_answers: np.ndarray, space: CandidateSpace,
          labels: Mapping[str, str], learned: Mapping[str, str], ks: Sequence[int], row: str
          ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the summary rows of one population of entities, with each learned method's lift against the
    best other ranking, ``lift``; its per-entity rows)."""
    best, k, gains = lift(found, ks, learned)
    table = summarise(n_answers, found, labels, ks).with_columns(pl.lit(row).alias("entities known"))
    names = list(found)
    table = table.with_columns(
        pl.Series(f"lift vs best other (hits@{k})", [labels[best[m]] if m in best else None for m in names], pl.String),
        pl.Series(f"lift_hits_at_{k}", [gains.get(f"{m}_lift_hits_at_{k}") for m in names], pl.Float64),
        pl.Series(f"lift_hits_at_{k}_se", [gains.get(f"{m}_lift_hits_at_{k}_se") for m in names], pl.Float64))
    return table, per_entity(space, sources, n_answers, found, labels, ks, row)


def _row_metrics(prefix: str, table: pl.DataFrame, found: Mapping[str, np.ndarray], learned: Mapping[str, str],
                 ks: Sequence[int]) -> dict[str, float]:
    """MLflow metrics of one row's table: ``<prefix><method>_<metric>`` and the learned methods' lifts."""
    out = {}
    for name, r in zip(found, table.iter_rows(named=True)):
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
