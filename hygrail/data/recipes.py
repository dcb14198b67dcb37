"""Text-mined solid-state synthesis recipes -> KG (issue #27): targets, precursors, operations, elements.

Source: the solid-state dataset of Kononova et al., "Text-mined dataset of inorganic materials
synthesis recipes", Scientific Data 6, 203 (2019) (CederGroupHub/text-mined-synthesis_public,
release 2019-12-03: 30,031 recipes from 23,268 papers), read where ``data.path`` points (never
copied into the repository). Any file of that JSON format is read: ``{"reactions": [...]}``,
plain ``.json`` or xz-compressed (recognised by its magic bytes, whatever the name).

Nodes, by name: Target and Precursor are ``material_formula``s (one material may be both, as two
nodes); Element a chemical element symbol; Operation an operation ``type`` in words ("heating" for
``HeatingOperation``, "liquid grinding" for ``LiquidGrinding``). Element symbols come from
``composition[].elements``; a variable there (``M``, ``RE``, ``Ln`` ...) stands for the elements
``elements_vars`` lists for it, and anything else that is not one of the 118 element symbols is
dropped.

Edges (undirected), each supported by recipes: Target-Precursor (the dated target relation: "X
can be synthesized from precursor P"), Target-Operation, Target-Element (the target's
composition) and Precursor-Element (the precursor's). Count = the number of recipes supporting the
edge; year = the earliest DOI year among them (``NO_YEAR`` when none can be dated). Element edges
are dated the same way, i.e. by the first recipe mentioning the material. The compositions are the
schema's static edge types, and a graph cut at a year (``KG.until``) holds a material's composition
only once the material exists, from its first dated recipe (``KG.made_by``; a material whose recipes
carry no date never does): at 2010, 32,082 of the 82,451 Target-Element edges and 3,301 of the 6,203
Precursor-Element edges, the other 50,369 and 2,902 withheld (issue #54: before, every composition was
kept, 40,760 Target-Element edges of materials first made after 2010 among them). A material asked
about or scored after the cutoff gets its composition at scoring time only (``KG.describe``).

Years from DOIs (``doi_years``): the dataset has no date field, but these publishers put one in
the DOI (sanity bounds 1990-2020; outside them, undated):
- Elsevier ``10.1016/j.<journal>.<yyyy>.`` and PII-style ``10.1016/S<issn>(<yy>)``;
- Wiley ``10.1002/<code>.<yyyy><5+ digits>`` and SICI-style ``10.1002/<issn>(<yyyymm>)``;
- Blackwell ``10.1111/j.<issn>.<yyyy>.``;
- Springer-style ``10.<registrant>/s<journal>-0<yy>-`` (Springer 10.1007, also RILEM 10.1617 and
  Nature's ``s41598-017-...``);
- RSC ``10.1039/<letter><digit>``: the manuscript id's letter is the decade (a 1990s, b 2000s,
  c 2010s, d 2020s) and the digit the year in it (``C4DT02335H``: 2014); the id is given at
  submission, so the year is the publication year or the one before.
ACS (``10.1021``), APS (``10.1103``), ECS (``10.1149``) and older Nature DOIs are left undated. On
the 2019-12-03 release this dates 26,250 of the 30,031 recipes (1996-2018).

Known limits (Sun & David, Faraday Discussions 2024): text-mining errors, uneven coverage, a bias
toward common precursors.

Recipes one by one (``recipe_table``, issue #47): the KG merges recipes into edges, but a chemist's
answer, and He et al.'s benchmark (Sci. Adv. 9, eadg8180, 2023), is one recipe's precursor *set*.
One row per recipe: its target as the KG names it (``target``), the material it made (``material``),
that material's elements, the distinct precursors (sorted) by identity, each precursor's elements and
how the recipe wrote it, the DOI and its year (``doi_years``). A precursor's identity is He et al.'s
(``collect_targets_in_reactions`` in their ``recommendation_utils.py`` keys precursors by the formula
of their composition): the summed composition written as whole numbers (``composition_formula``), so
``Li2CO3(3N)``, ``CO3Li2`` and ``Li2CO3`` are one precursor, and ``NH4H2PO4`` has one identity for its
eight spellings (2,056 written formulas, 1,810 identities); where an amount is no number (``1-x``) the
written formula is the identity. ``identity="formula"`` keeps the written formulas (the benchmark's
first protocol, experiments/recipes_sets.md). The dataset expands a target with a variable (``RBaCo2O5+δ``,
R one of nine rare earths) into one recipe per value and records the value in
``reaction.element_substitution``; the material is then the formula with its values
(``RBaCo2O5+ δ (R=Pr)``) and its elements hold the value only (the KG's Target-Element edges hold
all nine). A dopant the dataset lists under ``target.additives`` (``Ca2SnO4:Eu3+``: Eu) is an
element of the material too, marked in its name (``(+Eu)``), since a recipe for it needs a source
of it. Read so, 29,993 of the 30,031 recipes (99.87%) have a precursor for every element of their
material other than O, C, H, N, S and no precursor bringing any other element (the rule of
``hygrail.recipes``); taking the KG's element sets instead, 86.0%. Each row also holds what a chemist
reads beside a recorded set: the source's balanced reaction (``reaction_string``, with amounts), its
recorded firing conditions (``firing``: temperature, time and atmosphere of each heating step, from
``operations[].conditions``; 44,309 operations record a temperature, 19,246 an atmosphere), and
whether each precursor admits charge-balanced oxidation states (``data.chemistry.charge_balanced``,
pymatgen: the recipes' text-mining slips such as ``Li2O3`` and ``Ba2CO3`` do not; judged once per
table, 6-9 s on the whole release, cached with it).

Errors: a missing file, a file that is not xz / JSON (the editor line and column of a JSON
error), and the first malformed recipe (``record N``: the N-th entry of ``reactions``, 1-based)
are one-line ``DataError``s.
"""

from __future__ import annotations

import json
import logging
import lzma
import math
import re
from fractions import Fraction
from pathlib import Path

import polars as pl

from hygrail.data.chemistry import ELEMENTS, charge_balanced
from hygrail.kg import KG, NO_YEAR, DataError, Schema

log = logging.getLogger("hygrail.data")

TARGET, PRECURSOR, OPERATION, ELEMENT = "Target", "Precursor", "Operation", "Element"
XZ_MAGIC = b"\xfd7zXZ\x00"
YEARS = (1990, 2020)
# (pattern on the lower-cased DOI, how its group becomes a year): "yyyy", "yy" (90-99 -> 19yy), "20yy", "rsc"
DOI_YEARS = (
    (r"^10\.1016/j\.[a-z0-9]+\.(\d{4})\.", "yyyy"),
    (r"^10\.1016/s\d{4}-\d{3}[\dx]\((\d{2})\)", "yy"),
    (r"^10\.1002/[a-z]+\.(\d{4})\d{5}", "yyyy"),
    (r"^10\.1002/\d{4}-\d{3}[\dx]\((\d{4})\d{2}\)", "yyyy"),
    (r"^10\.1111/j\.\d{4}-\d{3}[\dx]\.(\d{4})\.", "yyyy"),
    (r"^10\.\d{4,5}/s\d{5}-0(\d{2})-", "20yy"),
    (r"^10\.1039/([a-d]\d)", "rsc"),
)


def doi_years(dois: pl.Series) -> pl.Series:
    """Publication year encoded in each DOI (module docstring), NO_YEAR where none is."""
    doi = pl.col("doi").str.to_lowercase().str.strip_chars()
    years = []
    for pattern, kind in DOI_YEARS:
        g = doi.str.extract(pattern, 1)
        if kind == "yyyy":
            years.append(g.cast(pl.Int32))
        elif kind == "rsc":
            decade = g.str.slice(0, 1).replace_strict({"a": 1990, "b": 2000, "c": 2010, "d": 2020}, default=None)
            years.append(decade.cast(pl.Int32) + g.str.slice(1, 1).cast(pl.Int32))
        else:
            yy = g.cast(pl.Int32)
            years.append(yy + (2000 if kind == "20yy" else pl.when(yy >= 90).then(1900).otherwise(2000)))
    year = pl.coalesce(years)
    sane = year.is_between(*YEARS)
    return pl.DataFrame({"doi": dois.cast(pl.String)}).select(
        pl.when(sane).then(year).otherwise(NO_YEAR).cast(pl.Int32).alias("year")
    )["year"]


def load_recipes(path: Path, schema: Schema) -> KG:
    path = Path(path)
    missing = [t for t in (TARGET, PRECURSOR, OPERATION, ELEMENT) if t not in schema.node_types]
    if missing:
        raise DataError(f"data.schema: loader synthesis_recipes needs node types {TARGET}, {PRECURSOR}, "
                        f"{OPERATION}, {ELEMENT}; missing {', '.join(missing)}")  # fmt: skip
    if not path.is_file():
        raise DataError(f"{path}: file not found; put the solid-state dataset (solid-state_dataset_2019-12-03.json.xz "
                        "of CederGroupHub/text-mined-synthesis_public) there or point data.path at it")  # fmt: skip
    recipes = _read_json(path)
    rows: dict[tuple[str, str], list[tuple[int, str, str]]] = {
        (TARGET, PRECURSOR): [], (TARGET, OPERATION): [], (TARGET, ELEMENT): [], (PRECURSOR, ELEMENT): [],
    }  # fmt: skip
    dois = []
    for i, r in enumerate(recipes, start=1):
        if not isinstance(r, dict):
            raise DataError(f"{path}: record {i}: a {type(r).__name__}; expected a recipe object")
        target = _formula(r.get("target"), path, i, "target")
        doi = r.get("doi")
        dois.append(doi if isinstance(doi, str) else "")
        for e in _elements(r["target"], path, i, "target"):
            rows[TARGET, ELEMENT].append((i, target, e))
        for k, p in enumerate(_list(r, "precursors", path, i), start=1):
            precursor = _formula(p, path, i, f"precursors[{k}]")
            rows[TARGET, PRECURSOR].append((i, target, precursor))
            for e in _elements(p, path, i, f"precursors[{k}]"):
                rows[PRECURSOR, ELEMENT].append((i, precursor, e))
        for k, op in enumerate(_list(r, "operations", path, i), start=1):
            kind = op.get("type") if isinstance(op, dict) else None
            if not isinstance(kind, str) or not kind.strip():
                raise DataError(f"{path}: record {i}: operations[{k}] has no type; expected e.g. HeatingOperation")
            rows[TARGET, OPERATION].append((i, target, kind.strip()))
    if not dois:
        raise DataError(f"{path}: reactions is empty; expected at least one recipe")

    year = pl.DataFrame({"recipe": range(1, len(dois) + 1), "year": doi_years(pl.Series(dois, dtype=pl.String))})
    pairs = {
        key: pl.DataFrame(r, schema={"recipe": pl.Int64, "a": pl.String, "b": pl.String}, orient="row").unique()
        for key, r in rows.items()
    }  # fmt: skip
    pairs[TARGET, OPERATION] = pairs[TARGET, OPERATION].with_columns(_operation_name("b")).unique()
    names = {TARGET: [], PRECURSOR: [], OPERATION: [], ELEMENT: []}
    for (ta, tb), df in pairs.items():
        names[ta].append(df["a"])
        names[tb].append(df["b"])
    nodes = (
        pl.concat([pl.DataFrame({"name": pl.concat(s).unique(), "type": t}) for t, s in names.items()])
        .sort(pl.col("type").replace_strict({t: i for i, t in enumerate(schema.node_types)}), "name")
        .with_row_index("node")
        .with_columns(pl.col("node").cast(pl.Int64))
    )
    edges = []
    for (ta, tb), df in pairs.items():
        ids = nodes.filter(pl.col("type") == ta).select(pl.col("name").alias("a"), pl.col("node").alias("u"))
        idb = nodes.filter(pl.col("type") == tb).select(pl.col("name").alias("b"), pl.col("node").alias("v"))
        edges.append(
            df.join(ids, on="a").join(idb, on="b").join(year, on="recipe")
            .group_by(pl.min_horizontal("u", "v").alias("u"), pl.max_horizontal("u", "v").alias("v"))
            .agg(pl.len().cast(pl.Int64).alias("count"),
                 pl.col("year").filter(pl.col("year") != NO_YEAR).min().fill_null(NO_YEAR).alias("year"))
            .select("u", "v", pl.lit(schema.edge_type(ta, tb)).alias("type"), "count", "year")
        )  # fmt: skip
    edges = pl.concat(edges).sort("u", "v")
    log.info("%s: %d recipes (%d with a DOI year), %d nodes, %d edges", path, len(dois),
             int((year["year"] != NO_YEAR).sum()), nodes.height, edges.height)  # fmt: skip
    return KG(schema, nodes.select("name", "type"), edges)


RECIPE_COLUMNS = {"recipe": pl.Int64, "target": pl.String, "material": pl.String, "composition": pl.String,
                  "elements": pl.List(pl.String), "precursors": pl.List(pl.String),
                  "precursor_elements": pl.List(pl.List(pl.String)),
                  "spellings": pl.List(pl.String), "doi": pl.String, "year": pl.Int32,
                  "balanced": pl.List(pl.Boolean), "reaction": pl.String, "firing": pl.String}
IDENTITIES = ("composition", "formula")
# Pauling electronegativities (rounded; estimates for some lanthanides and actinides): the element order of
# an identity's formula, after pymatgen's (He et al.'s keys are pymatgen formulas). The order only names the
# identity: which formulas share one depends on the amounts alone. An element without a value goes last.
ELECTRONEGATIVITY = dict(zip(
    "H Li Be B C N O F Na Mg Al Si P S Cl K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh "
    "Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po "
    "At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No Lr".split(),
    (2.20, 0.98, 1.57, 2.04, 2.55, 3.04, 3.44, 3.98, 0.93, 1.31, 1.61, 1.90, 2.19, 2.58, 3.16, 0.82, 1.00, 1.36, 1.54,
     1.63, 1.66, 1.55, 1.83, 1.88, 1.91, 1.90, 1.65, 1.81, 2.01, 2.18, 2.55, 2.96, 3.00, 0.82, 0.95, 1.22, 1.33, 1.60,
     2.16, 1.90, 2.20, 2.28, 2.20, 1.93, 1.69, 1.78, 1.96, 2.05, 2.10, 2.66, 2.60, 0.79, 0.89, 1.10, 1.12, 1.13, 1.14,
     1.13, 1.17, 1.20, 1.20, 1.10, 1.22, 1.23, 1.24, 1.25, 1.10, 1.27, 1.30, 1.50, 2.36, 1.90, 2.20, 2.20, 2.28, 2.54,
     2.00, 1.62, 2.33, 2.02, 2.00, 2.20, 2.20, 0.70, 0.90, 1.10, 1.30, 1.50, 1.38, 1.36, 1.28, 1.13, 1.28, 1.30, 1.30,
     1.30, 1.30, 1.30, 1.30, 1.30), strict=True))


def check_identity(identity) -> None:
    """One line when ``recipes.identity`` names no identity of ``IDENTITIES``."""
    if identity not in IDENTITIES:
        raise DataError(f"recipes.identity={identity!r}: expected one of {', '.join(IDENTITIES)}")


def composition_formula(amounts: dict[str, float]) -> str:
    """He et al.'s identity of a material: its element amounts scaled to the smallest whole numbers (to
    1/1000 of the least), elements by electronegativity, then symbol (pymatgen's order): ``Li2CO3(3N)``,
    ``CO3Li2`` and ``Li2CO3`` are all ``Li2CO3``; ``BiO1.5`` is ``Bi2O3``."""
    amounts = {e: a for e, a in amounts.items() if a > 0}
    if not amounts:
        raise ValueError("no element with a positive amount")
    least = min(amounts.values())
    ratios = {e: Fraction(a / least).limit_denominator(1000) for e, a in amounts.items()}
    scale = math.lcm(*(r.denominator for r in ratios.values()))
    whole = {e: int(r * scale) for e, r in ratios.items()}
    common = math.gcd(*whole.values())
    order = sorted(whole, key=lambda e: (ELECTRONEGATIVITY.get(e, math.inf), e))
    return "".join(e + (str(whole[e] // common) if whole[e] != common else "") for e in order)


def _composition(material: dict, substitution: dict) -> str | None:
    """``composition_formula`` of a material's summed composition (each part's amount x its element
    amounts, a variable element replaced as ``substitution`` says); None when an amount is no number
    (``1-x``) or an element unknown."""
    amounts: dict[str, float] = {}
    try:
        for part in material.get("composition") or []:
            times = float(part.get("amount") or 1)
            for symbol, n in (part.get("elements") or {}).items():
                symbol = substitution.get(symbol, symbol)
                if symbol not in ELEMENTS:
                    return None
                amounts[symbol] = amounts.get(symbol, 0.0) + times * float(n)
        return composition_formula(amounts)
    except (ValueError, TypeError, AttributeError, ZeroDivisionError):
        return None


def recipe_table(path: Path, identity: str = "composition") -> pl.DataFrame:
    """One row per recipe of the file (module docstring: "Recipes one by one"), ``RECIPE_COLUMNS``;
    ``recipe`` is the 1-based index into ``reactions``, as in the loader's errors; ``year`` NO_YEAR
    where the DOI carries none; ``composition`` the material's ``composition_formula`` (None where an
    amount is no number; a dopant under ``additives`` is not in it); ``precursors`` the distinct
    identities (``identity``: "composition", He et al.'s, or "formula", the written formula),
    ``spellings`` the formula each was written as in this recipe (the alphabetically first where two
    share an identity); ``balanced`` each precursor's ``chemistry.charge_balanced`` verdict on its
    composition (None: not judged); ``reaction`` the source's ``reaction_string`` (the balanced reaction,
    with amounts), ``firing`` its heating steps' recorded conditions (``firing``; None where none is
    recorded). Errors as ``load_recipes``'s."""
    check_identity(identity)
    try:
        import pymatgen.core  # noqa: F401  (chemistry.charge_balanced's library)
    except ImportError:
        raise DataError("recipes: the precursors' oxidation states need pymatgen; expected it installed "
                        "(pip install -e '.[real]')") from None
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found; put the solid-state dataset (solid-state_dataset_2019-12-03.json.xz "
                        "of CederGroupHub/text-mined-synthesis_public) there or point data.path at it")  # fmt: skip
    rows = []
    for i, r in enumerate(_read_json(path), start=1):
        if not isinstance(r, dict):
            raise DataError(f"{path}: record {i}: a {type(r).__name__}; expected a recipe object")
        target = _formula(r.get("target"), path, i, "target")
        reaction = r.get("reaction")
        sub = reaction.get("element_substitution") if isinstance(reaction, dict) else None
        sub = {k: v for k, v in (sub or {}).items() if isinstance(v, str) and v in ELEMENTS}
        elements = _elements(r["target"], path, i, "target", sub)
        added = sorted({e for a in r["target"].get("additives") or [] if isinstance(a, str)
                        for e in re.findall(r"[A-Z][a-z]?", a) if e in ELEMENTS} - elements)
        marks = [f"{k}={v}" for k, v in sorted(sub.items())] + [f"+{e}" for e in added]
        material = f"{target} ({', '.join(marks)})" if marks else target
        precursors, spelt, balanced = {}, {}, {}
        for k, p in enumerate(_list(r, "precursors", path, i), start=1):
            written = _formula(p, path, i, f"precursors[{k}]")
            composition = _composition(p, sub)
            key = (composition or written) if identity == "composition" else written
            precursors.setdefault(key, set()).update(_elements(p, path, i, f"precursors[{k}]", sub))
            spelt[key] = min(spelt.get(key, written), written)
            balanced[key] = charge_balanced(composition) if composition else None
        names = sorted(precursors)
        doi = r.get("doi")
        said = r.get("reaction_string")
        rows.append((i, target, material, _composition(r["target"], sub), sorted(elements | set(added)), names,
                     [sorted(precursors[n]) for n in names], [spelt[n] for n in names],
                     doi.strip() if isinstance(doi, str) else "", [balanced[n] for n in names],
                     said.strip() if isinstance(said, str) and said.strip() else None,
                     firing(r.get("operations"))))
    if not rows:
        raise DataError(f"{path}: reactions is empty; expected at least one recipe")
    table = pl.DataFrame(rows, schema={k: v for k, v in RECIPE_COLUMNS.items() if k != "year"}, orient="row")
    return table.with_columns(doi_years(table["doi"]).alias("year")).select(list(RECIPE_COLUMNS))


def firing(operations) -> str | None:
    """A recipe's recorded firing conditions, step by step: each operation with a temperature, time or
    atmosphere in its ``conditions`` as "<its word>: <temperature>, <time>, <atmosphere>" (``calcined:
    950 °C, 16 h, air; sintered: 1100-1200 °C``); None where no operation records one. Malformed
    conditions are left out, not fatal: they only annotate the recipe."""
    steps = []
    for op in operations if isinstance(operations, list) else []:
        c = op.get("conditions") if isinstance(op, dict) else None
        if not isinstance(c, dict):
            continue
        atmosphere = [a for a in c.get("heating_atmosphere") or [] if isinstance(a, str) and a.strip()]
        parts = [_span(c.get("heating_temperature"), {"C": "°C"}), _span(c.get("heating_time"), {}),
                 ", ".join(dict.fromkeys(a.strip() for a in atmosphere))]
        if any(parts):
            word = op.get("token") if isinstance(op.get("token"), str) else op.get("type")
            steps.append(f"{word}: " + ", ".join(p for p in parts if p))
    return "; ".join(steps) or None


def _span(values, units: dict[str, str]) -> str:
    """``heating_temperature`` / ``heating_time`` entries as "950 °C" or "800-900 °C" (" / " between entries)."""
    out = []
    for v in values if isinstance(values, list) else []:
        if not isinstance(v, dict):
            continue
        nums = [x for x in (v.get("values") or [v.get("min_value"), v.get("max_value")])
                if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if nums:
            lo, hi = min(nums), max(nums)
            unit = units.get(v.get("units"), v.get("units") or "")
            out.append(f"{lo:g}" + (f"-{hi:g}" if hi != lo else "") + (f" {unit}" if unit else ""))
    return " / ".join(out)


def _read_json(path: Path) -> list:
    """The ``reactions`` list of a .json or .json.xz file."""
    with open(path, "rb") as f:
        xz = f.read(len(XZ_MAGIC)) == XZ_MAGIC
    try:
        with (lzma.open(path, "rt", encoding="utf-8") if xz else open(path, encoding="utf-8")) as f:
            data = json.load(f)
    except (lzma.LZMAError, EOFError) as e:
        raise DataError(f"{path}: not a readable .xz file ({e}); expected an xz-compressed JSON file") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: invalid UTF-8 bytes; expected a UTF-8 encoded JSON file") from None
    except json.JSONDecodeError as e:
        where = "the decompressed text, " if xz else ""
        raise DataError(f"{path}: {where}line {e.lineno} column {e.colno}: invalid JSON ({e.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("reactions"), list):
        raise DataError(f'{path}: no "reactions" list at the top level; expected {{"reactions": [recipe, ...]}}')
    return data["reactions"]


def _formula(material, path: Path, i: int, where: str) -> str:
    formula = material.get("material_formula") if isinstance(material, dict) else None
    if not isinstance(formula, str) or not formula.strip():
        raise DataError(f"{path}: record {i}: {where} has no material_formula; expected a material with a formula")
    return formula.strip()


def _list(recipe: dict, key: str, path: Path, i: int) -> list:
    value = recipe.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError(f"{path}: record {i}: {key} is a {type(value).__name__}; expected a list")
    return value


def _elements(material: dict, path: Path, i: int, where: str, substitution: dict | None = None) -> set[str]:
    """Element symbols of a material's composition, variables replaced by the elements they stand for
    (by the one ``substitution`` gives where it names the variable)."""
    variables = material.get("elements_vars")
    variables = dict(variables) if isinstance(variables, dict) else {}
    variables |= {k: [v] for k, v in (substitution or {}).items()}
    out = set()
    for c in material.get("composition") or []:
        elements = c.get("elements") if isinstance(c, dict) else None
        if not isinstance(elements, dict):
            raise DataError(f"{path}: record {i}: {where}.composition entry has no elements object; "
                            "expected {\"elements\": {symbol: amount}}")  # fmt: skip
        for symbol in elements:
            values = variables.get(symbol)
            out.update(e for e in (values if isinstance(values, list) and values else [symbol]) if e in ELEMENTS)
    return out


def _operation_name(col: str) -> pl.Expr:
    """``HeatingOperation`` -> "heating", ``LiquidGrinding`` -> "liquid grinding"."""
    return (
        pl.col(col).str.replace(r"(.)Operation$", "${1}").str.replace_all(r"([a-z])([A-Z])", "${1} ${2}").str.to_lowercase()
        .alias(col)
    )  # fmt: skip
