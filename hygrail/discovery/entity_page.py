"""The per-entity part of ``task=discover``'s page (``entities``' lists and retrospective): a section per
named entity, in Markdown and HTML, each list with its first rows' evidence cards, put before the
ranked table of the pages ``cards`` writes (``add_to_report``), and the per-entity retrospective as
CSV files.

With ``discover.entities_only`` nothing is walked or reviewed, and the page is the question alone
(``write_question``, issue #56: a clinical geneticist "would probably not" use the old one again). It
opens on the question and, per named entity, what it matched in which database, the back-test
sentence (``backtest``), its list with the sources' ids linked to their public pages
(``hpo.public_page``) and the suggestions that contradict the record flagged (``opposites``), then
what is already recorded, whole and collapsed, by the ontology's top-level branch; the run's details
last, collapsed. Band, regions and verdicts are the reviewer's routing, and no reviewer ran: they are
not shown, and neither are the empty ranked table and cards. ``lists.csv`` holds every listed row
with its ids and scores; the terminal prints each entity's first five (``terminal``)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl

from hygrail.data.hpo import public_page
from hygrail.discovery import backtest
from hygrail.discovery.cards import card, md_card
from hygrail.discovery.entities import Entity, EntityList, EntityReport
from hygrail.discovery.opposites import Opposites
from hygrail.kg import KG


def _cells(df: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Column names and text cells, ``x`` / ``x_se`` column pairs merged into "x ± se"."""
    cols = [c for c in df.columns if not c.endswith("_se")]
    rows = []
    for r in df.iter_rows(named=True):
        cells = []
        for c in cols:
            v = r[c]
            if f"{c}_se" in r:
                se = r[c + "_se"]
                cells.append("" if v is None else f"{v:.3f}" if se is None or se != se else f"{v:.3f} ± {se:.3f}")
            else:
                cells.append("" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v))
        rows.append(cells)
    return [c.replace("_at_", "@") for c in cols], rows


def _sections(report: EntityReport, kg: KG | None = None) -> list[tuple[str, str, pl.DataFrame | None, EntityList | None]]:
    """(level, heading, table, the entity's list) of each part: per-entity lists, then the
    retrospective table; ``kg``: the graph ranked, whose source ids (``KG.keys``) join each list."""
    parts = [("2", "Per-entity discovery", None, None)] if report.lists else []
    for e in report.lists:
        t = e.table
        if kg is not None and any(kg.keys):
            keys = pl.Series("source id", [kg.keys[i] for i in t["id"].to_list()], pl.String)
            t = t.select(*t.columns[:2], keys, *t.columns[2:])
        t = t.rename({"partner": report.partner_type[e.entity.node_type], "score": f"{e.ranker} score",
                            "gnn_score": "GNN score", "gnn_rank": "GNN rank"}, strict=False)
        if e.ranker != "GNN":  # the band and its regions are the GNN's (calibrated on its scores), not the ranker's
            t = t.rename({"region": "GNN region"}, strict=False)
        twins = ", ".join(map(str, e.entity.twins))
        left = (f"; left out as known: {e.on_twins:,} annotated on its twin{'s' if len(e.entity.twins) > 1 else ''} "
                f"(id {twins}), {e.implied_by_twins:,} "
                f"implied by those (their ancestors)" if e.on_twins or e.implied_by_twins else "")
        other = "" if not e.entity.also else (
            f"; '{e.entity.name}' also names {e.entity.also_type} id {', '.join(map(str, e.entity.also))}: "
            f"write '{e.entity.also_type}:{e.entity.name}' (or its id) for that one's list")
        head = (f"{e.entity}: its best {e.table.height} of {e.candidates:,} candidates "
                f"({e.ranker} ranking, {e.seconds:.2f} s{left}{other})")
        parts.append(("3", head, t if t["future_year"].is_not_null().any() else t.drop("future_year"), e))
        parts += [("4" if table is not None else "p", h, table, None) for h, table in e.parts]  # p: a paragraph
    if report.retro is not None:
        parts.append(("2", "Per-entity retrospective evaluation", report.retro, None))
    return parts


def _cards_note(e: EntityList) -> str:
    """What the entity's cards cover: the first ``discover.entity_cards`` of its list (the bound on
    their cost: one evidence retrieval each)."""
    return (f"Evidence cards of its best {e.cards.height} (discover.entity_cards={e.cards.height}; the verdicts "
            f"as in the ranked table: a reviewed pair by the review rule, any other by its region of the band).")


def card_anchor(e: EntityList, rank: int) -> str:
    """The element id of an entity's card: apart from the ranked table's ``card-<rank>``."""
    return f"entity-{e.entity.node}-card-{rank}"


def _md_table(cols: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines, a blank line after."""
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols),
            *("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows), ""]


def markdown(report: EntityReport, kg: KG | None = None) -> str:
    lines = []
    for level, head, table, e in _sections(report, kg):
        lines += [head if level == "p" else "#" * int(level) + " " + head, ""]
        if level == "2" and table is not None:
            lines += [report.note, ""]
        if table is not None:
            lines += _md_table(*_cells(table))
        if e is not None and e.cards is not None and e.cards.height:
            lines += [_cards_note(e), ""]
            for row in e.cards.iter_rows(named=True):
                lines += md_card(row, level=4)
    return "\n".join(lines)


def to_html(report: EntityReport, kg: KG | None = None) -> str:
    esc = html.escape
    out = []
    for level, head, table, e in _sections(report, kg):
        out.append(f"<p class='entity'>{esc(head)}</p>" if level == "p" else f"<h{level} class='entity'>{esc(head)}</h{level}>")
        if level == "2" and table is not None:
            out.append(f"<p>{esc(report.note)}</p>")
        if table is not None:
            cols, rows = _cells(table)
            carded = set() if e is None or e.cards is None else set(e.cards["rank"].to_list())

            def cell(c: str, j: int, r: list[str]) -> str:  # a carded row's rank links to its card
                if j == 0 and e is not None and r[0].isdigit() and int(r[0]) in carded:
                    return f"<td><a href='#{card_anchor(e, int(r[0]))}'>{esc(c)}</a></td>"
                return f"<td>{esc(c)}</td>"

            out.append("<table class='entity'><thead><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols)
                       + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(cell(c, j, r) for j, c in enumerate(r)) + "</tr>" for r in rows)
                       + "</tbody></table>")
        if e is not None and e.cards is not None and e.cards.height:
            out.append(f"<p class='small'>{esc(_cards_note(e))}</p><div class='entity-cards'>"
                       + "".join(card(row, card_anchor(e, row["rank"])) for row in e.cards.iter_rows(named=True))
                       + "</div>")
    return "".join(out)


# Where the sections go in the pages ``cards`` writes: before the global ranked table.
MARKERS = {"hypotheses.md": "## Ranked hypotheses", "index.html": "<h2>Ranked hypotheses</h2>"}


def add_to_report(report: EntityReport, out: Path, kg: KG | None = None) -> None:
    """The sections into ``out``'s hypotheses.md and index.html (``kg``: the graph ranked, for its source
    ids); the retrospective table also as ``retrospective_entities.csv``, its rows entity by entity as
    ``retrospective_per_entity.csv``."""
    for name, fragment in (("hypotheses.md", markdown(report, kg) + "\n"), ("index.html", to_html(report, kg))):
        page = (out / name).read_text()
        if MARKERS[name] not in page:
            raise RuntimeError(f"{out / name}: no {MARKERS[name]!r} to put the per-entity sections before "
                               f"(hygrail/discovery/cards.py changed its layout)")
        (out / name).write_text(page.replace(MARKERS[name], fragment + MARKERS[name], 1))
    if report.retro is not None:
        report.retro.write_csv(out / "retrospective_entities.csv")
    if report.each is not None:
        report.each.write_csv(out / "retrospective_per_entity.csv")


# -- the question page (discover.entities_only; module docstring) -----------------------------------------
RECORDED_HEAD = "Recorded in the graph"  # the heading of compositions.recorded_part: the page lists it whole
SHOWN_IN_TERMINAL = 5  # rows a query prints per entity, as task=recipes prints its five sets
# under a list with a flagged row: what the flag means (experiments/contradictions.md)
FLAG_NOTE = ("'opposite of': the suggestion and a recorded or suggested feature are opposite poles of one quality in "
             "the ontology. For one patient they exclude each other; HPO still records both for many diseases (a "
             "disease's annotations pool its patients), so the flag asks for a look, not a rejection.")


@dataclass
class Section:
    """One named entity as the question page shows it."""

    lst: EntityList
    key: str | None  # its source's id ('ORPHA:648'); None where the graph keeps none
    matched: str  # what was asked and what it matched
    trust: str  # the back-test sentence, or that there is none yet
    table: pl.DataFrame  # rank, partner, partner_id, score, [gnn_score, gnn_rank,] contradicts, partner_node
    recorded: pl.DataFrame  # branch, partner, partner_id, references, year: every recorded partner
    partner: str  # what is listed ('clinical feature')
    parts: list[tuple[str, pl.DataFrame | None]]  # the list's other parts (a new composition's), recorded aside


def _matched(e: Entity, kg: KG, twins: Sequence[int]) -> str:
    """What was asked and what it matched, with the database (issue #56: 'Noonan syndrome' mapped
    silently to one node)."""
    key, page = kg.keys[e.node], public_page(kg.keys[e.node])
    where = f"the {page[0]} entry {key}" if page else (key or f"id {e.node}")
    name = e.name.removesuffix(f" ({key})") if key else e.name
    if e.matched in ("source id", "node id"):
        head = f"Asked as {e.asked}: {where}, '{name}'."
    elif e.asked and e.asked == name:
        head = f"'{e.asked}' matched {where} by {e.matched}."
    elif e.asked:
        head = f"'{e.asked}' matched {where}, '{name}', by {e.matched}."
    else:
        head = f"{where}, '{name}'."
    others = [kg.keys[t] or f"id {t}" for t in twins]
    if others:
        head += (f" The same {kg.schema.display_name(e.node_type)} under {', '.join(others)}: what is recorded there is "
                 f"left out of this list as known.")
    return head


def branches(kg: KG, nodes: Sequence[int], node_type: str) -> list[str]:
    """Each node's top-level branches of the ontology (``KG.ancestors``): its ancestors-or-self among the
    terms right below the type's root ('Abnormality of the nervous system'), joined by '; '; '' without a
    hierarchy."""
    anc = kg.ancestors
    if anc is None:
        return [""] * len(nodes)
    mine = kg.nodes_of_type(node_type)
    depth = np.diff(anc.indptr)[mine]
    roots = set(mine[depth == 0].tolist())
    top = {int(i) for i in mine[depth > 0]
           if set(anc.indices[anc.indptr[i]:anc.indptr[i + 1]].tolist()) <= roots}
    out = []
    for n in nodes:
        up = {int(n)} | set(anc.indices[anc.indptr[n]:anc.indptr[n + 1]].tolist())
        out.append("; ".join(sorted(kg.names[b] for b in up & top)))
    return out


def question_sections(report: EntityReport, kg: KG, relation: str, trust_path: Path | None) -> list[Section]:
    """The question page's sections, read from the graph the lists were ranked on (module docstring);
    ``trust_path``: ``discover.trust_table`` (None: not set)."""
    from hygrail.discovery.compositions import recorded as recorded_of

    rel = kg.schema.relation(relation)
    table = backtest.read_table(trust_path) if trust_path is not None else None
    opposites: dict[str, Opposites] = {}
    out = []
    for lst in report.lists:
        e = lst.entity
        partner_type = rel.dst if e.node_type == rel.src else rel.src
        partner = kg.schema.display_name(partner_type)
        if partner_type not in opposites:
            opposites[partner_type] = Opposites.of(kg, partner_type)
        rec = recorded_of(kg, e.node, rel) if e.node < kg.num_nodes else pl.DataFrame(schema={"id": pl.Int64})
        ids = lst.table["id"].to_list()
        flags = opposites[partner_type].flags(ids, rec["id"].to_list())
        contradicts = ["; ".join(f"opposite of {kg.label(o)} ({w})" for o, w in flags.get(i, [])) for i in ids]
        cols = [pl.col("rank"), pl.col("partner"), pl.Series("partner_id", [kg.keys[i] for i in ids], pl.String),
                pl.col("score")]
        cols += [pl.col(c) for c in ("gnn_score", "gnn_rank", "recorded for") if c in lst.table.columns]
        t = lst.table.select(*cols, pl.Series("contradicts", contradicts, pl.String), pl.col("id").alias("partner_node"))
        if rec.height:
            rec = rec.with_columns(pl.Series("branch", branches(kg, rec["id"].to_list(), partner_type), pl.String),
                                   pl.Series("partner_id", [kg.keys[i] for i in rec["id"].to_list()], pl.String))
            rec = rec.select("branch", "partner", "partner_id", "references", "year", pl.col("id").alias("partner_node")
                             ).sort("branch", "partner")
        figure = backtest.pick(table, rel.name, lst.ranker, rec.height)
        noun = kg.schema.display_name(e.node_type)
        trust = backtest.sentence(figure, noun, partner) if figure else backtest.missing(
            trust_path, table, lst.ranker, rec.height, noun)
        trust = f"{trust} {lst.choice}" if lst.choice else trust
        key = kg.keys[e.node] if e.node < kg.num_nodes else None
        out.append(Section(lst, key, _matched(e, kg, e.twins) if e.node < kg.num_nodes else str(e), trust, t, rec,
                           partner, [p for p in lst.parts if not p[0].startswith(RECORDED_HEAD)]))
    return out


def _linked(text: str, key: str | None) -> str:
    """``text`` as HTML, linked to the public page of the source id ``key`` where it has one."""
    page = public_page(key)
    return f"<a href='{html.escape(page[1])}'>{html.escape(text)}</a>" if page else html.escape(text)


def _shown(s: Section) -> tuple[list[str], list[list[tuple[str, str]]]]:
    """The list's columns as the page heads them and, per row, (text, HTML) cells."""
    label = s.lst.ranker
    heads = {"rank": "rank", "partner": s.partner, "partner_id": "id", "score": f"score ({label})",
             "gnn_score": "GNN score", "gnn_rank": "GNN rank", "recorded for": "recorded for",
             "contradicts": "contradicts"}
    cols = [c for c in heads if c in s.table.columns and (c != "contradicts" or s.table["contradicts"].str.len_chars().sum())]
    if not any(s.table["partner_id"].to_list()):
        cols.remove("partner_id")
    rows = []
    for r in s.table.iter_rows(named=True):
        cells = []
        for c in cols:
            v = r[c]
            text = "" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)
            cell = _linked(text, r["partner_id"]) if c in ("partner", "partner_id") else html.escape(text)
            cells.append((text, cell))
        rows.append(cells)
    return [heads[c] for c in cols], rows


def _recorded_head(s: Section) -> str:
    n = s.recorded.height
    if not n:
        return "Nothing recorded for it in the graph ranked here."
    by = "by the ontology's top-level branch, then name" if s.recorded["branch"].str.len_chars().sum() else "by name"
    return f"Recorded for it: {n:,} {backtest.plural(s.partner) if n != 1 else s.partner} ({by}; not suggested again)"


def _plain(s: Section) -> str:
    """The entity's name less the source id HPO appends to a name several entries share."""
    return s.lst.entity.name.removesuffix(f" ({s.key})") if s.key else s.lst.entity.name


def _heading(s: Section) -> str:
    return _plain(s) + (f" ({s.key})" if s.key else "")


def question_markdown(summary: dict, sections: Sequence[Section]) -> str:
    lines = [f"# {summary['title']}", ""]
    lines += [x for line in summary["lead"] for x in (line, "")]
    lines += [f"> **Warning:** {w}\n" for w in summary.get("warnings", ())]
    for s in sections:
        lines += [f"## {_heading(s)}", "", s.matched, "", f"**{s.trust}**", ""]
        heads, rows = _shown(s)
        lines += _md_table(heads, [[t for t, _ in r] for r in rows]) if rows else []
        lines += [FLAG_NOTE, ""] if "contradicts" in heads else []
        lines += [_left_out(s.lst), ""] if _left_out(s.lst) else []
        for head, table in s.parts:
            lines += [f"### {head}" if table is not None else head, ""]
            lines += _md_table(*_cells(table)) if table is not None else []
        if s.recorded.height:
            rows = [[r["branch"], r["partner"], r["partner_id"] or "", r["references"], r["year"] or ""]
                    for r in s.recorded.iter_rows(named=True)]
            lines += ["<details><summary>" + html.escape(_recorded_head(s), quote=False) + "</summary>", "",
                      *_md_table(["branch", s.partner, "id", "references", "year"], rows), "</details>", ""]
        else:
            lines += [_recorded_head(s), ""]
    lines += ["<details><summary>Run details</summary>", "", *(f"- {k}: {v}" for k, v in summary["facts"].items()),
              "", "</details>", ""]
    return "\n".join(lines)


def _left_out(e: EntityList) -> str:
    """What the list leaves out as known on the entity's twins (``entities.known_through_twins``)."""
    if not (e.on_twins or e.implied_by_twins):
        return ""
    return (f"Left out as known: {e.on_twins:,} recorded on the same {e.entity.node_type.lower()} under another id and "
            f"{e.implied_by_twins:,} implied by those (their ancestors); {e.candidates:,} candidates ranked.")


QUESTION_CSS = """
.entity-section{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:12px 18px;margin:14px 0}
.entity-section h2{margin:0 0 4px}.trust{font-size:15px;font-weight:600;margin:6px 0 10px}
td.flag{color:#8e1b13}details{margin:8px 0}summary{cursor:pointer;color:#1f3a5f}
"""


def question_html(summary: dict, sections: Sequence[Section]) -> str:
    from hygrail.discovery.cards import CSS

    e = html.escape
    out = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(summary['title'])}</title>",
           f"<style>{CSS}{QUESTION_CSS}</style></head><body><header><h1>{e(summary['title'])}</h1>",
           *(f"<p>{e(line)}</p>" for line in summary["lead"]), "</header><main>",
           *(f"<div class='warning'>Warning: {e(w)}</div>" for w in summary.get("warnings", ()))]
    for s in sections:
        heads, rows = _shown(s)
        flag = heads.index("contradicts") if "contradicts" in heads else -1
        out += [f"<section class='entity-section' id='entity-{s.lst.entity.node}'>",
                f"<h2>{e(_plain(s))}" + (f" <small>({_linked(s.key, s.key)})</small>" if s.key else "") + "</h2>",
                f"<p class='small matched'>{e(s.matched)}</p>", f"<p class='trust'>{e(s.trust)}</p>"]
        if rows:
            out.append("<table class='list'><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td{' class=flag' if j == flag and t else ''}>{c}</td>"
                                                  for j, (t, c) in enumerate(r)) + "</tr>" for r in rows)
                       + "</tbody></table>")
        out += [f"<p class='small'>{e(FLAG_NOTE)}</p>"] if flag >= 0 else []
        out += [f"<p class='small'>{e(_left_out(s.lst))}</p>"] if _left_out(s.lst) else []
        for head, table in s.parts:
            out.append(f"<h3>{e(head)}</h3>" if table is not None else f"<p>{e(head)}</p>")
            if table is not None:
                cols, cells = _cells(table)
                out.append("<table><thead><tr>" + "".join(f"<th>{e(c)}</th>" for c in cols) + "</tr></thead><tbody>"
                           + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in cells)
                           + "</tbody></table>")
        if s.recorded.height:
            out.append(f"<details class='recorded'><summary>{e(_recorded_head(s))}</summary><table><thead><tr>"
                       f"<th>branch</th><th>{e(s.partner)}</th><th>id</th><th>references</th><th>year</th></tr></thead><tbody>"
                       + "".join(f"<tr><td>{e(r['branch'])}</td><td>{_linked(r['partner'], r['partner_id'])}</td>"
                                 f"<td>{_linked(r['partner_id'] or '', r['partner_id'])}</td><td class='num'>{r['references']}</td>"
                                 f"<td>{r['year'] or ''}</td></tr>" for r in s.recorded.iter_rows(named=True))
                       + "</tbody></table></details>")
        else:
            out.append(f"<p class='small'>{e(_recorded_head(s))}</p>")
        out.append("</section>")
    out += ["<details class='run'><summary>Run details</summary><div class='facts'>",
            *(f"<div class='fact'><b>{e(k)}</b>{e(str(v))}</div>" for k, v in summary["facts"].items()),
            "</div></details></main><script>document.body.dataset.ready='1'</script></body></html>"]
    return "".join(out)


def question_csv(sections: Sequence[Section]) -> pl.DataFrame:
    """Every listed row with its ids and scores, entity by entity."""
    frames = [s.table.select(
        pl.lit(s.lst.entity.asked or s.lst.entity.name).alias("asked"), pl.lit(s.lst.entity.name).alias("entity"),
        pl.lit(s.key, pl.String).alias("entity_id"), pl.lit(s.lst.ranker).alias("list"), "rank", "partner",
        "partner_id", "score", *(c for c in ("gnn_score", "gnn_rank") if c in s.table.columns), "contradicts",
        pl.lit(s.lst.entity.node, pl.Int64).alias("entity_node"), "partner_node") for s in sections]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def terminal(sections: Sequence[Section], n: int = SHOWN_IN_TERMINAL) -> list[str]:
    """Each entity's first ``n`` rows as the terminal prints them."""
    lines = []
    for s in sections:
        lines += [f"{_heading(s)}: {s.matched}", f"  {s.trust}"]
        for r in s.table.head(n).iter_rows(named=True):
            flag = f"  [{r['contradicts']}]" if r["contradicts"] else ""
            ident = f" ({r['partner_id']})" if r["partner_id"] else ""
            lines.append(f"  {r['rank']}. {r['partner']}{ident}  {r['score']:.3f}{flag}")
    return lines


LIST_FILE = "lists.csv"


def write_question(report: EntityReport, kg: KG, summary: dict, out: Path) -> list[Section]:
    """The question page into ``out``: index.html, hypotheses.md (the same in Markdown) and ``LIST_FILE``."""
    sections = question_sections(report, kg, summary["relation"], summary["trust_table"])
    (out / "hypotheses.md").write_text(question_markdown(summary, sections))
    (out / "index.html").write_text(question_html(summary, sections))
    question_csv(sections).write_csv(out / LIST_FILE)
    return sections
