"""The recipes page as a chemist reads it (issue #56): the question, then per target the trust sentence
and the five sets, each marked recorded, adapted or composed, with the recorded recipe behind it (its
balanced reaction and firing conditions as the source gives them, DOI link); what the recipes record
for the target, collapsed; the run's details last, collapsed. ``index.html`` (offline, one file),
``sets.md`` (the same in Markdown) and ``sets.csv`` (one row per listed set).

A section (``page.sections``) is a dict: ``asked`` (``asked.Asked``), ``proposals`` (rows: rank,
precursors, kind, text, material, year, doi, reaction, firing, score), ``recorded`` (the sets recorded
for its materials), ``near`` (a new composition's most similar recorded materials), ``trust`` (the
sentence).
"""

from __future__ import annotations

import html
from typing import Sequence

import polars as pl

from hygrail.recipes.asked import Problem
from hygrail.recipes.library import Library

KINDS = {"recorded": "recorded for this or a similar material, as is",
         "adapted": "a similar material's recorded set, changed for this one",
         "composed": "composed element by element: no recipe records it"}
STYLE = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}"
         "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:4px 8px;"
         "text-align:left;vertical-align:top}th{background:#f3f3f3}.set{font-weight:bold;white-space:nowrap}"
         ".small{color:#555;font-size:90%}.trust{background:#eef5ff;padding:.5em .8em;border-left:4px solid #4a7fd0}"
         ".kind{font-size:85%;padding:1px 6px;border-radius:3px;white-space:nowrap}.recorded{background:#d9f0d9}"
         ".adapted{background:#fdf0c8}.composed{background:#eee}.problem{color:#8a1f11}")


def question(values: Sequence[str]) -> str:
    """The question as asked (``recipes.targets``), in one line."""
    return f"Which precursors to try for {', '.join(values)}?"


def heading(s: dict) -> str:
    a = s["asked"]
    els = ", ".join(sorted(a.elements))
    if a.material is None:
        return f"{a.name}: a new composition ({els}), not in the recipes; ranked from its elements"
    n = sum(r.recipes for r in s["recorded"])
    matched = f"; matched {a.matched}" if a.matched else ""
    return (f"{a.name}: {n} recipe{'s' * (n != 1)} record {len(s['recorded'])} set{'s' * (len(s['recorded']) != 1)} "
            f"({els}{matched})")


def shortfall(s: dict, k: int) -> str:
    """A line when fewer than ``k`` sets exist for the target."""
    n = len(s["proposals"])
    return "" if n >= k else (f"only {n} sets obey the rules with the precursors the recipes record for its elements"
                              if n else "no set obeys the rules: some element has no compatible recorded precursor")


def behind(r: dict) -> str:
    """The recorded recipe behind a set, in words: its reaction and firing conditions as recorded."""
    if r["kind"] == "composed":
        return ""
    whose = "" if r["kind"] == "recorded" else " (the set it was adapted from)"
    return (f"reaction{whose}: {r['reaction'] or 'not recorded'}; firing: "
            f"{r['firing'] or 'no conditions recorded'}")


def markdown(lib: Library, facts: dict, values: Sequence[str], secs: list[dict], problems: Sequence[Problem],
             k: int) -> str:
    lines = ["# Precursor sets to try", "", question(values), ""]
    lines += [f"- not answered: {p.why}" for p in problems] + ([""] if problems else [])
    for s in secs:
        lines += [f"## {heading(s)}", "", s["trust"], "", "| # | precursors | kind | evidence | recorded recipe |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['rank']} | {r['precursors']} | {r['kind']} | {r['text'].replace('|', '/')} | "
                  f"{behind(r).replace('|', '/')} |" for r in s["proposals"]]
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
    lines += ["## Run details", "", *(f"- {key}: {v}" for key, v in facts.items()), ""]
    return "\n".join(lines)


def doi_link(doi: str | None) -> str:
    return f"<a href='https://doi.org/{html.escape(doi)}'>{html.escape(doi)}</a>" if doi else ""


def to_html(lib: Library, facts: dict, values: Sequence[str], secs: list[dict], problems: Sequence[Problem],
            k: int) -> str:
    esc = html.escape
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Precursor sets</title><style>", STYLE,
           "</style></head><body><h1>Precursor sets to try</h1>",
           f"<p id='question'>{esc(question(values))}</p>"]
    if problems:
        out.append("<ul id='problems'>" + "".join(f"<li class='problem'>not answered: {esc(p.why)}</li>"
                                                  for p in problems) + "</ul>")
    for s in secs:
        out.append(f"<section class='target'><h2>{esc(heading(s))}</h2><p class='trust'>{esc(s['trust'])}</p>"
                   "<table class='sets'><tr><th>#</th><th>precursors</th><th>kind</th><th>evidence</th>"
                   "<th>recorded recipe behind it</th></tr>")
        for r in s["proposals"]:
            text = esc(r["text"])
            if r["doi"]:
                text = text.replace(esc(f"doi:{r['doi']}"), doi_link(r["doi"]))
            out.append(f"<tr><td>{r['rank']}</td><td class='set'>{esc(r['precursors'])}</td>"
                       f"<td><span class='kind {r['kind']}' title='{esc(KINDS[r['kind']])}'>{r['kind']}</span></td>"
                       f"<td>{text}</td><td class='small'>{esc(behind(r))}</td></tr>")
        out.append("</table>" + (f"<p class='small'>{esc(shortfall(s, k))}</p>" if shortfall(s, k) else ""))
        if s["recorded"]:
            out.append(f"<details><summary>Recorded for {esc(s['asked'].name)} ({len(s['recorded'])} sets)</summary>"
                       "<table><tr><th>precursors</th><th>recipes</th><th>first year</th><th>DOI</th></tr>")
            out += [f"<tr><td class='set'>{esc(lib.show(r.precursors))}</td><td>{r.recipes}</td>"
                    f"<td>{r.year or 'unknown'}</td><td>{doi_link(r.doi)}</td></tr>" for r in s["recorded"]]
        else:
            out.append("<details><summary>Most similar recorded materials (Jaccard index of the element sets) and "
                       "their most recorded set</summary><table><tr><th>material</th><th>similarity</th><th>set</th>"
                       "<th>first year</th><th>DOI</th></tr>")
            out += [f"<tr><td>{esc(m)}</td><td>{sim:.2f}</td><td class='set'>{esc(lib.show(r.precursors))}</td>"
                    f"<td>{r.year or 'unknown'}</td><td>{doi_link(r.doi)}</td></tr>" for m, sim, r in s["near"]]
        out.append("</table></details></section>")
    out.append("<details id='run'><summary>Run details</summary><ul class='small'>"
               + "".join(f"<li>{esc(key)}: {esc(str(v))}</li>" for key, v in facts.items()) + "</ul></details>")
    return "".join(out) + "</body></html>"


def csv_rows(secs: list[dict]) -> pl.DataFrame:
    """One row per listed set: the target, its rank, precursors, kind, evidence and the recipe behind it."""
    return pl.DataFrame([{"target": s["asked"].name, "material": s["asked"].material, "rank": r["rank"],
                          "precursors": r["precursors"], "kind": r["kind"], "evidence": r["text"],
                          "from_material": r["material"], "year": r["year"], "doi": r["doi"],
                          "reaction": r["reaction"], "firing": r["firing"], "score": r["score"]}
                         for s in secs for r in s["proposals"]],
                        schema={"target": pl.String, "material": pl.String, "rank": pl.Int64, "precursors": pl.String,
                                "kind": pl.String, "evidence": pl.String, "from_material": pl.String,
                                "year": pl.Int64, "doi": pl.String, "reaction": pl.String, "firing": pl.String,
                                "score": pl.Float64})
