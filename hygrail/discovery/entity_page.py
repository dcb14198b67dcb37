"""The per-entity part of ``task=discover``'s page (``entities``' lists and retrospective): a section per
named entity, in Markdown and HTML, each list with its first rows' evidence cards, put before the
ranked table of the pages ``cards`` writes (``add_to_report``), and the per-entity retrospective as
CSV files."""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl

from hygrail.discovery.cards import card, md_card
from hygrail.discovery.entities import EntityList, EntityReport


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


def _sections(report: EntityReport) -> list[tuple[str, str, pl.DataFrame | None, EntityList | None]]:
    """(level, heading, table, the entity's list) of each part: per-entity lists, then the
    retrospective table."""
    parts = [("2", "Per-entity discovery", None, None)] if report.lists else []
    for e in report.lists:
        t = e.table.rename({"partner": report.partner_type[e.entity.node_type], "score": f"{e.ranker} score",
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


def markdown(report: EntityReport) -> str:
    lines = []
    for level, head, table, e in _sections(report):
        lines += [head if level == "p" else "#" * int(level) + " " + head, ""]
        if level == "2" and table is not None:
            lines += [report.note, ""]
        if table is not None:
            cols, rows = _cells(table)
            lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols),
                      *("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows), ""]
        if e is not None and e.cards is not None and e.cards.height:
            lines += [_cards_note(e), ""]
            for row in e.cards.iter_rows(named=True):
                lines += md_card(row, level=4)
    return "\n".join(lines)


def to_html(report: EntityReport) -> str:
    esc = html.escape
    out = []
    for level, head, table, e in _sections(report):
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


def add_to_report(report: EntityReport, out: Path) -> None:
    """The sections into ``out``'s hypotheses.md and index.html; the retrospective table also as
    ``retrospective_entities.csv``, its rows entity by entity as ``retrospective_per_entity.csv``."""
    for name, fragment in (("hypotheses.md", markdown(report) + "\n"), ("index.html", to_html(report))):
        page = (out / name).read_text()
        if MARKERS[name] not in page:
            raise RuntimeError(f"{out / name}: no {MARKERS[name]!r} to put the per-entity sections before "
                               f"(hygrail/discovery/cards.py changed its layout)")
        (out / name).write_text(page.replace(MARKERS[name], fragment + MARKERS[name], 1))
    if report.retro is not None:
        report.retro.write_csv(out / "retrospective_entities.csv")
    if report.each is not None:
        report.each.write_csv(out / "retrospective_per_entity.csv")
