"""``task=recipes`` (``make discover DATA=synthesis_recipes``): for each named target, the ranked
precursor sets as a chemist reads them, with the recorded recipes behind each, on one offline page.

A target is a material of the recipes or a formula, matched by composition (``asked``: ``TiO3Ba`` is
BaTiO3; a formula the recipes lack, ``Li6PS5I``, is ranked from its elements alone, He et al.'s
unseen target); a value that is neither is named on the page and in the terminal, and the other
targets are answered. ``recipes.targets`` is a list or one string of comma-separated targets
(``make discover DATA=synthesis_recipes TARGETS="LiCoO2, Na3V2(PO4)3"``).

What is read: every recipe of the file, undated ones too (no cutoff: today's question), through the
set ranker (``ranker``) fit on the newest ``recipes.window`` dated years (its library the recipes
before them), as the benchmark fits it at a cutoff. For a recorded material its own recorded sets
are candidates like any other (a chemist wants the route already published first), and the page
lists them all below the proposals; a set holding the target itself is left out (no synthesis of it;
6 of the 30,031 recorded sets are such), and so is every precursor the library's rules refuse
(``library``: no charge-balanced oxidation states, a gas, a bare element for a kind of material not
made from them).

Each proposed set carries its evidence (``evidence``) and its kind: *recorded*, "recorded for
<material> (<year>, <DOI>)" where a similar material's recorded set is reused as it is (the most
similar of those that record it; how many others do); *adapted*, "adapted from <material>'s recorded
set" with what was dropped (and why) and added where it was made valid for the target; else
*composed*, with each precursor's own scores: its share of the library's recipes of that element
(per-element popularity) and of the similar materials'. A recorded or adapted set shows the cited
recipe's balanced reaction and firing conditions as the source records them (``data.recipes``). Above
the sets, the trust sentence (``trust``): how often, in the back-test, the first five sets held a
route recorded within three years, for targets like this one (``recipes.trust`` names the table).

Where it goes: ``paths.outputs``/recipes/<targets>-<hash>/ (``recipes.out`` overrides), one folder per
query (the hash is over the targets and every option), holding ``index.html``, ``sets.md`` and
``sets.csv`` (one row per proposed set; ``render``). Cached under ``paths.cache``/recipes: the parsed
recipe table (keyed by the file's path, size and modification time) and the fitted ranker (keyed by the
table and the options). Measured timings are in experiments/recipes_sets.md.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import time
from dataclasses import fields
from pathlib import Path
from typing import Sequence

import polars as pl
from omegaconf import DictConfig, OmegaConf

from hygrail.kg import NO_YEAR, DataError
from hygrail.recipes import options, render, trust
from hygrail.recipes.asked import Asked, itself, targets
from hygrail.recipes.library import Library, Recorded
from hygrail.recipes.ranker import Proposal, SetRanker, own_sets

log = logging.getLogger("hygrail.recipes")
VERSION = "recipes-6"  # bump when a change alters the parsed table or the fitted ranker: cached ones then miss
SIMILAR_SHOWN = 5  # similar recorded materials listed for a new composition


def evidence(lib: Library, asked: Asked, p: Proposal) -> dict:
    """The proposal's evidence (module docstring): ``kind``, ``text``, and the material, year, DOI and
    recipe it cites."""
    c = p.candidate
    exact = sorted((s for s in c.sources if s.change is None), key=lambda s: (-s.similarity, -s.recorded.recipes))
    adapted = sorted((s for s in c.sources if s.change is not None), key=lambda s: (-s.similarity, -s.recorded.recipes))
    if exact or adapted:
        s = (exact or adapted)[0]
        when = f"{s.recorded.year}" if s.recorded.year is not None else "year unknown"
        who = f"{s.material} itself" if s.material in asked.materials else s.material
        recipes = f"{s.recorded.recipes} recipes, first " if s.recorded.recipes > 1 else ""
        if exact:
            others = len({x.material for x in exact}) - 1
            text = f"recorded for {who} ({recipes}{when}, doi:{s.recorded.doi})"
            text += f"; also recorded for {others} more similar material{'s' * (others > 1)}" if others else ""
        else:
            change = s.change
            parts = ([f"{lib.show([q])} dropped ({lib.why_dropped(q, asked.elements)})" for q in change.dropped]
                     + [f"{lib.show([q])} added for {e}" for e, q in change.added])
            text = (f"adapted from {who}'s recorded set {lib.show(s.recorded.precursors)} ({recipes}{when}, "
                    f"doi:{s.recorded.doi}): {'; '.join(parts)}")
        return {"kind": "recorded" if exact else "adapted", "text": text, "material": s.material,
                "similarity": s.similarity, "year": s.recorded.year, "doi": s.recorded.doi, "recipe": s.recorded.recipe}
    parts = []
    for e, q in sorted(c.composed.choice.items()):
        parts.append(f"{lib.show([q])} for {e} ({lib.probability(e, q):.0%} of {e} recipes, "
                     f"{c.local[e].get(q, 0.0):.0%} near it)")
    return {"kind": "composed", "text": "composed: " + "; ".join(parts), "material": None, "similarity": None,
            "year": None, "doi": None, "recipe": None}


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
def recorded_for(lib: Library, a: Asked) -> list[Recorded]:
    """The sets recorded for the target's materials, merged (each set once: its recipes summed, the
    earliest cited), most recipes first."""
    merged: dict[tuple[str, ...], Recorded] = {}
    for m in a.materials:
        for r in lib.sets[lib.index[m]]:
            old = merged.get(r.precursors)
            first = old if old is not None and (old.year or 9999, old.doi) <= (r.year or 9999, r.doi) else r
            merged[r.precursors] = Recorded(r.precursors, r.recipes + (old.recipes if old else 0), first.year,
                                            first.doi, first.recipe)
    return sorted(merged.values(), key=lambda r: (-r.recipes, r.year if r.year is not None else 9999, r.precursors))


def sections(lib: Library, ranker: SetRanker, asked: Sequence[Asked], k: int, recipes: dict[int, tuple],
             table: pl.DataFrame | None) -> list[dict]:
    """Per target (``render``'s module docstring): its proposals with evidence and the recipe behind each,
    its recorded sets or its most similar recorded materials, the trust sentence; ``recipes``: recipe id ->
    (reaction, firing); ``table``: the trust table (``trust.read``)."""
    out = []
    for a in asked:
        t0 = time.perf_counter()
        first = frozenset().union(*(own_sets(lib, m) for m in a.materials))  # its own recorded routes lead
        props = ranker.propose(lib, a.elements, k, avoid=itself(lib, a), first=first)
        rows = []
        for p in props:
            ev = evidence(lib, a, p)
            reaction, firing = recipes.get(ev["recipe"], (None, None))
            rows.append({"rank": p.rank, "precursors": lib.show(p.precursors), "score": p.score, "reaction": reaction,
                         "firing": firing} | ev)
        near = [(lib.names[i], s, lib.sets[i][0]) for i, s in lib.similar(a.elements, SIMILAR_SHOWN + 1)
                if lib.names[i] != a.material][:SIMILAR_SHOWN]
        pop = "seen" if a.materials else "unseen"
        out.append({"asked": a, "proposals": rows, "recorded": recorded_for(lib, a), "near": near,
                    "trust": trust.sentence(trust.figure(table, pop, len(a.elements), k), pop, k),
                    "seconds": time.perf_counter() - t0})
    return out


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
    asked, problems = targets(lib, d["targets"])  # before the fit: a misspelt target is named in seconds
    if not asked:
        raise DataError("recipes.targets: none could be answered: " + "; ".join(p.why for p in problems))
    timer["library"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ranker, last, ranker_hit = fitted(table, table_key, d, cache, int(cfg.seed))
    timer["ranker"] = time.perf_counter() - t0
    recipes = {r: (reaction, firing) for r, reaction, firing in table.select("recipe", "reaction", "firing").iter_rows()}
    figures = trust.read(data_path(d["trust"])) if d["trust"] else None
    secs = sections(lib, ranker, asked, d["sets"], recipes, figures)
    timer["sets"] = sum(s["seconds"] for s in secs)
    dated = table.filter(pl.col("year") != NO_YEAR)["year"]
    hits = {"table": table_hit, "ranker": ranker_hit}
    refused = ", ".join(f"{k} {v:.0%}" for k, v in sorted(lib.elemental.items(), key=lambda x: -x[1]))
    facts = {"data": f"{cfg.data.path} ({lib.recipes:,} recipes, {len(lib.names):,} materials; DOI years "
                     f"{dated.min()}-{dated.max()}, {table.height - len(dated):,} recipes undated, all read)",
             "rules": f"every element but {', '.join(sorted(d['free']))} has a precursor; no precursor brings an element "
                      f"outside the target's and {', '.join(sorted(d['volatile']))} (recipes.volatile, recipes.free); "
                      f"never proposed: {len(lib.unbalanced)} precursors admitting no charge-balanced oxidation states "
                      f"(pymatgen), gases as bare elements, and bare elements for kinds of material the recipes rarely "
                      f"make from them (share of recipes using one: {refused})",
             "ranked by": f"the set ranker (hygrail/recipes/ranker.py), trees fit on {last - d['window'] + 1}-{last} "
                          f"({ranker.fit_targets:,} materials, {ranker.fit_rows:,} candidate sets); how it does on He et "
                          f"al.'s benchmark: experiments/recipes_sets.md",
             "trust figures": f"{d['trust']}" if figures is not None else f"{d['trust']} (none found)",
             "caveat": "suggestions from text-mined literature recipes (Kononova et al. 2019; mining errors and a bias "
                       "toward common precursors: Sun & David 2024), for a chemist to judge, not findings",
             "seconds": ", ".join(f"{k} {v:.1f}" + (" (cached)" if hits.get(k) else "") for k, v in timer.items())}
    out = out_folder(cfg, d["targets"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "sets.md").write_text(render.markdown(lib, facts, d["targets"], secs, problems, d["sets"]))
    (out / "index.html").write_text(render.to_html(lib, facts, d["targets"], secs, problems, d["sets"]))
    render.csv_rows(secs).write_csv(out / "sets.csv")
    for p in problems:
        print(f"not answered: {p.why}")
    for s in secs:
        print(render.heading(s))
        print(f"  {s['trust']}")
        for r in s["proposals"]:
            print(f"  {r['rank']}. {r['precursors']}  [{r['text']}]")
        if render.shortfall(s, d["sets"]):
            print(f"  ({render.shortfall(s, d['sets'])})")
    print(f"report: {out.resolve() / 'index.html'} (also sets.md, sets.csv) in {time.perf_counter() - t_start:.1f} s",
          flush=True)
    return {"status": "finished", "cell": f"recipes {' '.join(d['targets'])}"}
