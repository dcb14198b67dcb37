"""``task=recipes`` (``make discover DATA=synthesis_recipes``): for each named target, the ranked
precursor sets as a chemist reads them, with the recorded recipes behind each, on one offline page.

A target is a material of the recipes, named as the recipe table names it (``BaTiO3``, or
``RBaCo2O5+ δ (R=Pr)``; exactly, else case-insensitively), or any formula of chemical elements the
recipes lack (``Li6PS5I``: ``discovery.compositions.parse``), ranked from its elements alone (He et
al.'s unseen target). Anything else is a one-line error with the closest names.

What is read: every recipe of the file, undated ones too (no cutoff: today's question), through the
set ranker (``ranker``) fit on the newest ``recipes.window`` dated years (its library the recipes
before them), as the benchmark fits it at a cutoff. For a recorded material its own recorded sets
are candidates like any other (a chemist wants the route already published first), and the page
lists them all below the proposals; a set holding the target itself is left out (no synthesis of it;
6 of the 30,031 recorded sets are such).

Each proposed set carries its evidence (``evidence``): "recorded for <material> (<year>, <DOI>)"
where a similar material's recorded set is reused as it is (the most similar of those that record
it; how many others do), "adapted from <material>'s recorded set" with what was dropped and added
where it was made valid for the target, else "composed" with each precursor's own scores: its share
of the library's recipes of that element (per-element popularity) and of the similar materials'.

Where it goes: ``paths.outputs``/recipes/<targets>-<hash>/ (``recipes.out`` overrides), one folder per
query (the hash is over the targets and every option), holding ``index.html``, ``sets.md`` and
``sets.csv`` (one row per proposed set). Cached under ``paths.cache``/recipes: the parsed recipe table
(keyed by the file's path, size and modification time) and the fitted ranker (keyed by the table and
the options). Measured timings are in experiments/recipes_sets.md.
"""

from __future__ import annotations

import difflib
import hashlib
import html
import io
import json
import logging
import re
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Sequence

import polars as pl
from omegaconf import DictConfig, OmegaConf

from hygrail.kg import NO_YEAR, DataError
from hygrail.recipes import options
from hygrail.recipes.library import Library
from hygrail.recipes.ranker import Proposal, SetRanker

log = logging.getLogger("hygrail.recipes")
VERSION = "recipes-5"  # bump when a change alters the parsed table or the fitted ranker: cached ones then miss
SIMILAR_SHOWN = 5  # similar recorded materials listed for a new composition


@dataclass
class Asked:
    """A target as named: what the page calls it, its library material (None: a new composition), its elements."""

    name: str
    material: str | None
    elements: frozenset[str]


def resolve(lib: Library, value: str) -> Asked:
    """The material ``value`` names, else the new composition it writes (module docstring)."""
    from hygrail.discovery.compositions import parse

    if value in lib.index:
        return Asked(value, value, lib.elements[lib.index[value]])
    folded = [m for m in lib.names if m.casefold() == value.casefold()]
    if len(folded) == 1:
        return Asked(folded[0], folded[0], lib.elements[lib.index[folded[0]]])
    try:
        formula = parse(value)
    except ValueError as why:
        close = difflib.get_close_matches(value, lib.names, n=5, cutoff=0.6)
        raise DataError(f"recipes.targets: {value!r} is no material of the recipes"
                        + (f" (closest: {', '.join(close)})" if close else "")
                        + f" and not a formula: {why}") from None
    elements = frozenset(formula.elements)
    lib.check_elements(elements, f"recipes.targets: {value!r}")
    return Asked(value, None, elements)


def itself(lib: Library, a: Asked) -> frozenset[str]:
    """The precursors that are the target itself (no synthesis of it): those written as its name, and its
    composition's identity (``data.recipes.composition_formula``) when its name is a formula."""
    from hygrail.data.recipes import composition_formula
    from hygrail.discovery.compositions import parse

    out = {a.name} | lib.naming(a.name) | ({a.material} | lib.naming(a.material) if a.material else set())
    try:
        out.add(composition_formula(dict(parse(a.name).amounts)))
    except ValueError:  # a material's name that is no formula (``RBaCo2O5+ δ (R=Pr)``): its spellings suffice
        pass
    return frozenset(out)


def evidence(lib: Library, asked: Asked, p: Proposal) -> dict:
    """The proposal's evidence (module docstring): ``text``, and the material, year and DOI it cites."""
    c = p.candidate
    exact = sorted((s for s in c.sources if s.change is None), key=lambda s: (-s.similarity, -s.recorded.recipes))
    adapted = sorted((s for s in c.sources if s.change is not None), key=lambda s: (-s.similarity, -s.recorded.recipes))
    if exact or adapted:
        s = (exact or adapted)[0]
        when = f"{s.recorded.year}" if s.recorded.year is not None else "year unknown"
        who = f"{s.material} itself" if s.material == asked.material else s.material
        recipes = f"{s.recorded.recipes} recipes, first " if s.recorded.recipes > 1 else ""
        if exact:
            others = len({x.material for x in exact}) - 1
            text = f"recorded for {who} ({recipes}{when}, doi:{s.recorded.doi})"
            text += f"; also recorded for {others} more similar material{'s' * (others > 1)}" if others else ""
        else:
            change = s.change
            parts = ([f"{', '.join(lib.show([q]) for q in change.dropped)} dropped (foreign elements)"]
                     if change.dropped else []) + [f"{lib.show([q])} added for {e}" for e, q in change.added]
            text = (f"adapted from {who}'s recorded set {lib.show(s.recorded.precursors)} ({recipes}{when}, "
                    f"doi:{s.recorded.doi}): {'; '.join(parts)}")
        return {"text": text, "material": s.material, "similarity": s.similarity, "year": s.recorded.year,
                "doi": s.recorded.doi}
    parts = []
    for e, q in sorted(c.composed.choice.items()):
        parts.append(f"{lib.show([q])} for {e} ({lib.probability(e, q):.0%} of {e} recipes, "
                     f"{c.local[e].get(q, 0.0):.0%} near it)")
    return {"text": "composed: " + "; ".join(parts), "material": None, "similarity": None, "year": None, "doi": None}


# -- caches ------------------------------------------------------------------------------------------
def recipe_table(path: Path, cache: Path, identity: str = "composition") -> tuple[pl.DataFrame, str, bool]:
    """``data.recipes.recipe_table`` of ``path`` (precursors by ``identity``), kept under ``cache`` by its
    path, size, modification time and ``identity``: (the table, its cache key, whether it came from the cache)."""
    from hygrail.cache import DiskCache, content_key, load
    from hygrail.data.recipes import recipe_table as read

    if not Path(path).is_file():
        read(path, identity)  # its one-line error
    st = Path(path).stat()
    key = content_key(VERSION, str(Path(path).resolve()), st.st_size, st.st_mtime_ns, identity)

    def write(tmp: Path) -> None:
        # through bytes: polars' own file writer reports a full disk as a ComputeError, hiding the OSError
        parquet = io.BytesIO()
        read(path, identity).write_parquet(parquet)
        (tmp / "recipes.parquet").write_bytes(parquet.getbuffer())

    table, hit = DiskCache(cache).get_or_create(key, write, lambda entry: load(entry / "recipes.parquet", pl.read_parquet),
                                                what="the parsed recipe table")
    return table, key, hit


def fitted(table: pl.DataFrame, table_key: str, d: dict, cache: Path, seed: int) -> tuple[SetRanker, int, bool]:
    """The ranker fit on the newest ``window`` dated years (module docstring), kept under ``cache`` by
    the table's key and the options: (ranker, the window's last year, whether cached). Kept as its
    settings in ``ranker.json`` and its trees as arrays (``hygrail.treeio``): nothing read runs code."""
    import sklearn

    from hygrail import treeio
    from hygrail.cache import DiskCache, content_key, load

    last = int(table.filter(pl.col("year") != NO_YEAR)["year"].max())
    settings = {k: d[k] for k in ("neighbours", "composed", "window")}
    key = content_key(VERSION, table_key, settings, list(d["volatile"]), list(d["free"]), seed, sklearn.__version__,
                      treeio.FORMAT)
    done: list[SetRanker] = []

    def write(tmp: Path) -> None:
        done.append(SetRanker(**settings, seed=seed).fit(table, last, d["volatile"], d["free"], progress=True))
        treeio.save(done[0].model, tmp, "trees")
        kept = {f.name: getattr(done[0], f.name) for f in fields(SetRanker) if f.name != "model"}
        (tmp / "ranker.json").write_text(json.dumps(kept, indent=1))

    def read(entry: Path) -> SetRanker:
        if done:  # just fit and written
            return done[0]
        return SetRanker(**load(entry / "ranker.json", lambda f: json.loads(f.read_text())),
                         model=treeio.read(entry, "trees"))

    ranker, hit = DiskCache(cache).get_or_create(key, write, read, what="the fitted set ranker")
    return ranker, last, hit


def out_folder(cfg: DictConfig, targets: Sequence[str]) -> Path:
    """``recipes.out``, else one folder per query under ``paths.outputs``/recipes (module docstring)."""
    if cfg.recipes.get("out"):
        return Path(str(cfg.recipes.out))
    slug = re.sub(r"[^A-Za-z0-9.+-]+", "_", "+".join(targets))[:80].strip("_") or "targets"
    query = OmegaConf.to_container(cfg.recipes, resolve=True) | {"data": str(cfg.data.path), "seed": int(cfg.seed)}
    digest = hashlib.sha256(repr(sorted(query.items())).encode()).hexdigest()[:8]
    return Path(cfg.paths.outputs) / "recipes" / f"{slug}-{digest}"


# -- the page --------------------------------------------------------------------------------------------
def sections(lib: Library, ranker: SetRanker, asked: Sequence[Asked], k: int) -> list[dict]:
    """Per target: its proposals with evidence, its recorded sets, its most similar recorded materials."""
    out = []
    for a in asked:
        t0 = time.perf_counter()
        props = ranker.propose(lib, a.elements, k, avoid=itself(lib, a))
        rows = [{"rank": p.rank, "precursors": lib.show(p.precursors), "score": p.score} | evidence(lib, a, p)
                for p in props]
        recorded = lib.sets[lib.index[a.material]] if a.material is not None else []
        near = [(lib.names[i], s, lib.sets[i][0]) for i, s in lib.similar(a.elements, SIMILAR_SHOWN + 1)
                if lib.names[i] != a.material][:SIMILAR_SHOWN]
        out.append({"asked": a, "proposals": rows, "recorded": recorded, "near": near,
                    "seconds": time.perf_counter() - t0})
    return out


def doi_link(doi: str | None) -> str:
    return f"<a href='https://doi.org/{html.escape(doi)}'>{html.escape(doi)}</a>" if doi else ""


def shortfall(s: dict, k: int) -> str:
    """A line when fewer than ``k`` sets exist for the target."""
    n = len(s["proposals"])
    return "" if n >= k else (f"only {n} sets obey the rules with the precursors the recipes record for its elements"
                              if n else "no set obeys the rules: some element has no compatible recorded precursor")


def heading(lib: Library, s: dict) -> str:
    a = s["asked"]
    els = ", ".join(sorted(a.elements))
    if a.material is None:
        return f"{a.name}: a new composition ({els}), not in the recipes; ranked from its elements"
    n = sum(r.recipes for r in s["recorded"])
    return f"{a.name}: {n} recipe{'s' * (n != 1)} record {len(s['recorded'])} set{'s' * (len(s['recorded']) != 1)} ({els})"


def markdown(lib: Library, facts: dict, secs: list[dict], k: int) -> str:
    lines = ["# Precursor sets to try", "", *(f"- {k}: {v}" for k, v in facts.items()), ""]
    for s in secs:
        lines += [f"## {heading(lib, s)}", "", "| rank | precursors | evidence | score (log-odds) |", "|---|---|---|---|"]
        lines += [f"| {r['rank']} | {r['precursors']} | {r['text'].replace('|', '/')} | {r['score']:.2f} |"
                  for r in s["proposals"]]
        lines += [f"\n{shortfall(s, k)}"] if shortfall(s, k) else []
        if s["recorded"]:
            lines += ["", f"Recorded for {s['asked'].name}:", "", "| precursors | recipes | first year | DOI |",
                      "|---|---|---|---|"]
            lines += [f"| {lib.show(r.precursors)} | {r.recipes} | {r.year or 'unknown'} | https://doi.org/{r.doi} |"
                      for r in s["recorded"]]
        else:
            lines += ["", "Most similar recorded materials (Jaccard index of the element sets) and their most recorded set:",
                      "", "| material | similarity | set | first year | DOI |", "|---|---|---|---|---|"]
            lines += [f"| {m} | {sim:.2f} | {lib.show(r.precursors)} | {r.year or 'unknown'} | https://doi.org/{r.doi} |"
                      for m, sim, r in s["near"]]
        lines.append("")
    return "\n".join(lines)


def to_html(lib: Library, facts: dict, secs: list[dict], k: int) -> str:
    esc = html.escape
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Precursor sets</title><style>",
           "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
           "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:4px 8px;"
           "text-align:left;vertical-align:top}th{background:#f3f3f3}.set{font-weight:bold;white-space:nowrap}"
           ".small{color:#555;font-size:90%}</style></head><body><h1>Precursor sets to try</h1><ul class='small'>",
           *(f"<li>{esc(k)}: {esc(str(v))}</li>" for k, v in facts.items()), "</ul>"]
    for s in secs:
        out.append(f"<h2>{esc(heading(lib, s))}</h2><table><tr><th>rank</th><th>precursors</th><th>evidence</th>"
                   f"<th>score (log-odds)</th></tr>")
        for r in s["proposals"]:
            text = esc(r["text"])
            if r["doi"]:
                text = text.replace(esc(f"doi:{r['doi']}"), doi_link(r["doi"]))
            out.append(f"<tr><td>{r['rank']}</td><td class='set'>{esc(r['precursors'])}</td><td>{text}</td>"
                       f"<td>{r['score']:.2f}</td></tr>")
        out.append("</table>" + (f"<p class='small'>{esc(shortfall(s, k))}</p>" if shortfall(s, k) else ""))
        if s["recorded"]:
            out.append(f"<p>Recorded for {esc(s['asked'].name)}:</p><table><tr><th>precursors</th><th>recipes</th>"
                       f"<th>first year</th><th>DOI</th></tr>")
            out += [f"<tr><td class='set'>{esc(lib.show(r.precursors))}</td><td>{r.recipes}</td>"
                    f"<td>{r.year or 'unknown'}</td><td>{doi_link(r.doi)}</td></tr>" for r in s["recorded"]]
        else:
            out.append("<p>Most similar recorded materials (Jaccard index of the element sets) and their most "
                       "recorded set:</p><table><tr><th>material</th><th>similarity</th><th>set</th><th>first year</th>"
                       "<th>DOI</th></tr>")
            out += [f"<tr><td>{esc(m)}</td><td>{sim:.2f}</td><td class='set'>{esc(lib.show(r.precursors))}</td>"
                    f"<td>{r.year or 'unknown'}</td><td>{doi_link(r.doi)}</td></tr>" for m, sim, r in s["near"]]
        out.append("</table>")
    return "".join(out) + "</body></html>"


def csv_rows(secs: list[dict]) -> pl.DataFrame:
    return pl.DataFrame([{"target": s["asked"].name, "material": s["asked"].material, "rank": r["rank"],
                          "precursors": r["precursors"], "score": r["score"], "evidence": r["text"],
                          "from_material": r["material"], "year": r["year"], "doi": r["doi"]}
                         for s in secs for r in s["proposals"]],
                        schema={"target": pl.String, "material": pl.String, "rank": pl.Int64, "precursors": pl.String,
                                "score": pl.Float64, "evidence": pl.String, "from_material": pl.String,
                                "year": pl.Int64, "doi": pl.String})


def main(cfg: DictConfig) -> dict:
    """The Hydra task (``task=recipes``): the page of ``recipes.targets``; prints each target's sets and
    where the page is."""
    from hygrail.data import data_path

    t_start = time.perf_counter()
    d = options(OmegaConf.to_container(cfg.recipes, resolve=True))
    if not d["targets"]:
        raise DataError("recipes.targets=[]: expected the materials to propose sets for, e.g. "
                        "recipes.targets='[BaTiO3, Li6PS5I]'")
    if cfg.data.get("loader") != "synthesis_recipes":
        raise DataError(f"task=recipes with data={cfg.data.name}: expected data=synthesis_recipes (the recipes' sets)")
    cache = Path(cfg.paths.cache) / "recipes"
    timer = {}
    t0 = time.perf_counter()
    table, table_key, table_hit = recipe_table(data_path(str(cfg.data.path)), cache, d["identity"])
    timer["table"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    lib = Library.build(table, None, d["volatile"], d["free"])
    asked = [resolve(lib, t) for t in d["targets"]]  # before the fit: a misspelt target fails in seconds
    timer["library"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ranker, last, ranker_hit = fitted(table, table_key, d, cache, int(cfg.seed))
    timer["ranker"] = time.perf_counter() - t0
    secs = sections(lib, ranker, asked, d["sets"])
    timer["sets"] = sum(s["seconds"] for s in secs)
    dated = table.filter(pl.col("year") != NO_YEAR)["year"]
    hits = {"table": table_hit, "ranker": ranker_hit}
    facts = {"data": f"{cfg.data.path} ({lib.recipes:,} recipes, {len(lib.names):,} materials; DOI years "
                     f"{dated.min()}-{dated.max()}, {table.height - len(dated):,} recipes undated, all read)",
             "rules": f"every element but {', '.join(sorted(d['free']))} has a precursor; no precursor brings an element "
                      f"outside the target's and {', '.join(sorted(d['volatile']))} (recipes.volatile, recipes.free)",
             "ranked by": f"the set ranker (hygrail/recipes/ranker.py), trees fit on {last - d['window'] + 1}-{last} "
                          f"({ranker.fit_targets:,} materials, {ranker.fit_rows:,} candidate sets); how it does on He et "
                          f"al.'s benchmark: experiments/recipes_sets.md",
             "caveat": "suggestions from text-mined literature recipes (Kononova et al. 2019; mining errors and a bias "
                       "toward common precursors: Sun & David 2024), for a chemist to judge, not findings",
             "seconds": ", ".join(f"{k} {v:.1f}" + (" (cached)" if hits.get(k) else "") for k, v in timer.items())}
    out = out_folder(cfg, d["targets"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "sets.md").write_text(markdown(lib, facts, secs, d["sets"]))
    (out / "index.html").write_text(to_html(lib, facts, secs, d["sets"]))
    csv_rows(secs).write_csv(out / "sets.csv")
    for s in secs:
        print(heading(lib, s))
        for r in s["proposals"]:
            print(f"  {r['rank']}. {r['precursors']}  [{r['text']}]")
        if shortfall(s, d["sets"]):
            print(f"  ({shortfall(s, d['sets'])})")
    print(f"report: {out.resolve() / 'index.html'} (also sets.md, sets.csv) in {time.perf_counter() - t_start:.1f} s",
          flush=True)
    return {"status": "finished", "cell": f"recipes {' '.join(d['targets'])}"}
