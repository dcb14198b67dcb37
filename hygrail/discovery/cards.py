"""The discovery written up for people: a ranked table (``hypotheses.parquet`` / ``.csv``), a
self-contained HTML report (``index.html``: no network, inline CSS and JS; a sortable, filterable
table and one card per hypothesis with its statement, score, verdict, the evidence sentences, the
endpoints' strongest associations and the connecting paths) and the same in Markdown
(``hypotheses.md``).

Every card's graph evidence is the Table 9 template rendering of the structured evidence of the
graph the GNN scored (retrieval is cheap; the reviewer's own text, e.g. an LLM summary, is shown
beside it when it differs). A card says how its verdict was reached: by the GNN outside the band,
by the LLM, or not yet (routed but beyond the review budget); beside each association the
numbers that gave it its style (count, NormCount, w, EviScore: ``evidence.retrieve``), node ids
beside names, and the pair's novelty view (graph distance, hub pair, ``novelty``). A review the rule
did not use (γ = ∞) is shown as such (``trust.UNTRUSTED``). The per-entity sections
(``entities``) render their cards with the same ``card`` / ``md_card``.

The page says how far to trust the list (``trust``): the held-out precision of each region, the
reviewer's figures on validation, and warnings in red at the top (a reviewer that accepts nearly
everything, one trained after the cutoff). Cards come in pages of ``CARDS_PER_PAGE`` inside the
one file (later pages as inert ``<template>``s the script swaps in), so that a list of any size
stays light to open and ``index.html#card-N`` opens card N wherever it is.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import polars as pl

from hygrail.discovery.trust import UNTRUSTED

# Columns of the ranked table, in order; ``structured`` holds the evidence object as JSON; distance,
# hub_pair, novelty and degree_adjusted are the novelty view among the listed (``novelty``).
COLUMNS = ("rank", "gnn_rank", "left", "right", "score", "region", "verdict", "decided_by", "review", "confidence",
           "reasoning", "statement", "evidence", "reviewer_evidence", "structured", "future_year", "distance",
           "hub_pair", "novelty", "degree_adjusted", "left_id", "right_id")
CARDS_PER_PAGE = 200  # cards per page of the HTML report (the first page is the page itself)
REGION_TEXT = {"auto_accept": "above b* (accepted by the GNN)", "routed": "in the band (LLM review)",
               "auto_reject": "below a* (rejected by the GNN)"}


def write_table(table: pl.DataFrame, out: Path) -> None:
    table.write_parquet(out / "hypotheses.parquet")
    table.write_csv(out / "hypotheses.csv")


def write_markdown(table: pl.DataFrame, summary: Mapping[str, Any], retro, out: Path) -> None:
    lines = [f"# {summary['title']}", ""]
    lines += [f"> **Warning:** {w}\n" for w in summary.get("warnings", ())]
    lines += [x for line in summary.get("lead", ()) for x in (line, "")]  # what was done, as the HTML header says
    lines += [*[f"- {k}: {v}" for k, v in facts(table, summary).items()], ""]
    if summary.get("trust"):
        lines += ["## How far to trust it", "", _md_table(pl.DataFrame(summary["trust"])), "", summary["trust_note"], ""]
    if retro is not None:
        lines += ["## Retrospective evaluation", ""]
        for title, df in retro_tables(retro):
            lines += [f"### {title}", "", _md_table(df), ""]
    cols = ("rank", "left", "right", "score", "region", "verdict", "confidence", "future_year", "distance", "hub_pair")
    lines += ["## Ranked hypotheses", "", _md_table(table.select(cols)), "", "## Evidence cards", ""]
    for row in table.iter_rows(named=True):
        lines += md_card(row)
    (out / "hypotheses.md").write_text("\n".join(lines))


def md_card(row: Mapping[str, Any], level: int = 3) -> list[str]:
    """One evidence card in Markdown (a row of ``COLUMNS``), headed at ``level``."""
    lines = [f"{'#' * level} {row['rank']}. {row['statement']}", "",
             f"{row['left']} (id {row['left_id']}) – {row['right']} (id {row['right_id']}). GNN score "
             f"{row['score']:.4f} (rank {row['gnn_rank']}); {REGION_TEXT[row['region']]}; verdict: "
             f"**{row['verdict']}** ({row['decided_by']}). {_novelty_text(row)}", ""]
    if row["review"] is not None:
        lines += [f"{_review_head(row)}. {row['reasoning'] or ''}", ""]
    return lines + ["```", row["evidence"] or "", "```", ""]


def _review_head(row: Mapping[str, Any]) -> str:
    """'LLM review: yes, confidence 0.79', said to be unused where the rule did not trust the reviewer
    (``trust.UNTRUSTED`` in the row's reason), so the review never reads as the verdict's cause."""
    conf = "" if row["confidence"] is None else f", confidence {row['confidence']:.2f}"
    unused = " (not used: γ = ∞)" if UNTRUSTED in (row["decided_by"] or "") else ""
    return f"LLM review{unused}: {row['review']}{conf}"


def facts(table: pl.DataFrame, summary: Mapping[str, Any]) -> dict[str, Any]:
    """The run's facts, with what is true of HyGRAIL's list against the GNN's (``agreement``)."""
    if table.is_empty():  # discover.entities_only: no global list to compare
        return dict(summary["facts"])
    return dict(summary["facts"]) | {"HyGRAIL's list against the GNN's": agreement(table, summary.get("order", "paper"))}


def agreement(table: pl.DataFrame, order: str = "paper") -> str:
    """Where HyGRAIL's list (the table's order) first differs from the GNN's (``gnn_rank``) among
    the listed hypotheses. Under ``discover.order=paper`` the LLM only reorders the band, so the
    lists agree at least through the candidates above b*; with none above b*, an LLM-accepted
    candidate can lead from rank 1. Under ``reviewed`` the review reorders the GNN's head itself."""
    differ = np.flatnonzero(table["gnn_rank"].to_numpy() != table["rank"].to_numpy())
    above = f"{int((table['region'] == 'auto_accept').sum()):,} listed above b*"
    if not len(differ):
        return f"identical over the {table.height:,} listed ({above})"
    first = int(differ[0]) + 1
    what = "the LLM reorders the band" if order == "paper" else "the review reorders the GNN's head"
    if first == 1:
        return f"differs from rank 1 on ({above}; {what})"
    return f"the GNN's down to rank {first - 1:,}, differs from rank {first:,} on ({above}; {what})"


def listed_moves(table: pl.DataFrame) -> tuple[int, int, int]:
    """(demoted, re-ordered, first differing rank; 0: none) of a ranked table (``retro.review_moves``):
    the rows the review rejected (its verdict, not the GNN's outside the band) against the rest."""
    from hygrail.discovery.retro import review_moves

    by = table["decided_by"]
    reviewed = ~(by.str.starts_with("GNN") | by.str.starts_with("routed, beyond")).to_numpy()
    return review_moves(table["gnn_rank"].to_numpy(), reviewed & (table["verdict"] == "reject").to_numpy())


def _novelty_text(row: Mapping[str, Any]) -> str:
    hub = "; both ends are hubs" if row["hub_pair"] else ""
    return (f"Graph distance {row['distance']}{hub}; among the listed: novelty-aware score {row['novelty']:.2f}, "
            f"degree-adjusted {row['degree_adjusted']:+.2f}.")


def retro_tables(retro) -> list[tuple[str, pl.DataFrame]]:
    """The retrospective evaluation (``retro.Retrospective``) for reading: the headline per method,
    AUC / AP per condition (one column per method), precision per degree-product bucket."""
    t = retro.table
    ks = sorted(int(c.removeprefix("precision_at_")) for c in t.columns if c.startswith("precision_at_"))
    h, d, c = retro.headline
    cols = ["method", "n_answers", "auc", "ap", *(f"precision_at_{k}" for k in ks), f"recall_at_{ks[-1]}"]
    head = retro.headline_rows().select(cols)
    methods = t["method"].unique(maintain_order=True).to_list()
    cells = [f"{a:.3f} / {p:.4f}" if np.isfinite(a) else "no answers" if not n else "n/a"
             for a, p, n in zip(t["auc"], t["ap"], t["n_answers"])]
    grid = (t.with_columns(pl.Series("AUC / AP", cells))
            .pivot(on="method", index=["horizon", "min_degree", "min_count", "n_answers"], values="AUC / AP")
            .select("horizon", "min_degree", "min_count", "n_answers", *methods))
    b = retro.buckets
    top = next(col for col in b.columns if col.startswith("in_top_"))
    small, large = ks[0], ks[-1]
    bucket_cell = (pl.col(f"precision_at_{small}").round(2).cast(pl.String) + " / "
                   + pl.col(f"precision_at_{large}").round(3).cast(pl.String) + " (" + pl.col(top).cast(pl.String) + ")")
    label = pl.format("{}: {} ({} answers)", pl.col("bucket"), pl.col("degree_product"), pl.col("n_answers"))
    buckets = (b.with_columns(bucket_cell.alias("cell"), label.alias("bucket d(u)·d(v)"))
               .pivot(on="bucket d(u)·d(v)", index="method", values="cell"))
    out = [(f"Headline: answers within {h} years of the cutoff, both ends of degree >= {d}, >= {c} reference(s)", head),
           ("ROC-AUC / AP over the whole candidate space per condition (horizon in years; minimum degree of both "
            "ends at the cutoff; minimum references; Science4Cast's grid)", grid),
           (f"Per degree-product bucket (headline answers): precision@{small} / precision@{large} within the bucket "
            f"(how many of the ranking's top {top.removeprefix('in_top_')} lie in it)", buckets)]
    if retro.margins is not None and retro.margins.height:
        out.append(("Margins (headline answers): each ranking against the best ranking of another family (the GNN's "
                    "own lists and the stack's variants are not each other's baselines), by AUC and by AP; ± the "
                    "standard error paired over the answers (retro.margins)", margin_table(retro.margins)))
    if retro.paired is not None:
        out.append((f"HyGRAIL (discover.order={retro.order}) against the GNN, paired at each K (headline answers): "
                    f"precision@K, the difference, the candidates that entered HyGRAIL's top K (as many left it) "
                    f"and the answers among those that entered (gained) and left (lost)", retro.paired))
    return out


def margin_table(m: pl.DataFrame) -> pl.DataFrame:
    """``retro.margins`` for reading: one row per method, its margin ± SE against the best other."""
    return m.select(
        "method",
        pl.format("{} ({})", pl.col("best_auc"), pl.col("best_auc_value").round(4)).alias("best other by AUC"),
        pl.format("{} ± {}", pl.col("auc_margin").round(4), pl.col("auc_margin_se").round(4)).alias("AUC margin"),
        pl.format("{} ({})", pl.col("best_ap"), pl.col("best_ap_value").round(5)).alias("best other by AP"),
        pl.format("{}% ± {}", (100 * pl.col("ap_gain")).round(1), (100 * pl.col("ap_gain_se")).round(1)).alias("AP gain"))


def _md_table(df: pl.DataFrame) -> str:
    def cell(v):
        if v is None:
            return ""
        return f"{v:.4f}" if isinstance(v, float) else str(v).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns)
    return head + "".join("\n| " + " | ".join(cell(v) for v in row) + " |" for row in df.iter_rows())


# -- HTML -------------------------------------------------------------------------------------------
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1f3a5f;color:#fff;padding:18px 28px}header h1{margin:0 0 6px;font-size:22px}
header p{margin:2px 0;opacity:.9}main{padding:18px 28px;max-width:1400px}
h2{font-size:18px;margin:26px 0 10px}.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:8px}
.fact{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:8px 10px}.fact b{display:block;font-size:12px;color:#5b6577;font-weight:600}
table{border-collapse:collapse;background:#fff;width:100%}#retro{width:auto}th,td{border-bottom:1px solid #e3e6eb;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5;cursor:pointer;user-select:none;white-space:nowrap;position:sticky;top:0}th.sorted-asc::after{content:" \\25B2"}th.sorted-desc::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr:hover td{background:#f3f7ff}
.tag{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600}
.accept{background:#d8f3dc;color:#1b5e20}.reject{background:#fde2e1;color:#8e1b13}.unreviewed{background:#eceff3;color:#495060}
.future{background:#fff1c2;color:#6b4e00}#filter{padding:6px 10px;width:320px;border:1px solid #c5cbd5;border-radius:5px;margin-bottom:8px}
.card{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:14px 18px;margin:12px 0}
.card h3{margin:0 0 6px;font-size:16px}.meta{color:#5b6577;font-size:13px;margin-bottom:8px}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:14px}.cols ul{margin:4px 0;padding-left:18px}
.ev{margin:6px 0;padding-left:18px}.path{font-family:ui-monospace,Menlo,monospace;font-size:12.5px}
.review{background:#f4f6fa;border-left:3px solid #1f3a5f;padding:6px 10px;margin:8px 0}.small{font-size:12px;color:#5b6577}
.warning{background:#fde2e1;color:#8e1b13;border:2px solid #c0392b;border-radius:6px;padding:10px 14px;margin:10px 0;font-weight:600}
.hub{background:#e6e0f8;color:#3d2a80}.wide{overflow-x:auto}.wide td{white-space:nowrap}h3{font-size:15px;margin:16px 0 6px}#pager{margin:6px 0 10px}#pager a{margin-right:8px}#pager a.current{font-weight:700;text-decoration:none;color:#1d2330}
"""

JS = """
function sortTable(th){const t=th.closest('table'),i=[...th.parentNode.children].indexOf(th),b=t.tBodies[0];
const asc=!th.classList.contains('sorted-asc');t.querySelectorAll('th').forEach(h=>h.classList.remove('sorted-asc','sorted-desc'));
th.classList.add(asc?'sorted-asc':'sorted-desc');const rows=[...b.rows];
const key=r=>{const v=r.cells[i].dataset.v??r.cells[i].textContent.trim();const n=parseFloat(v);return isNaN(n)?v.toLowerCase():n};
rows.sort((x,y)=>{const a=key(x),c=key(y);return (a<c?-1:a>c?1:0)*(asc?1:-1)});rows.forEach(r=>b.appendChild(r))}
function filterRows(q){q=q.toLowerCase();document.querySelectorAll('#ranked tbody tr').forEach(r=>{r.style.display=r.textContent.toLowerCase().includes(q)?'':'none'})}
document.querySelectorAll('#ranked th').forEach(th=>th.addEventListener('click',()=>sortTable(th)));
// index.html#sort=<column>[-desc]: open sorted (a link to a sorted view)
const m=location.hash.match(/^#sort=(.+?)(-desc)?$/);
if(m){const th=[...document.querySelectorAll('#ranked th')].find(h=>h.textContent===decodeURIComponent(m[1]));
if(th){sortTable(th);if(m[2])sortTable(th)}}
// Cards come in pages (one live, the others as <template>s): #card-N swaps in N's page, then shows N.
const PAGE=%d;
function openPage(p){const box=document.getElementById('cards'),cur=box.dataset.page;if(cur===String(p))return true;
const t=document.getElementById('cards-page-'+p);if(!t)return false;
const keep=document.createElement('template');keep.id='cards-page-'+cur;keep.content.append(...box.childNodes);
document.getElementById('pages').append(keep);box.append(t.content);t.remove();box.dataset.page=String(p);
document.querySelectorAll('#pager a').forEach(a=>a.classList.toggle('current',a.dataset.page===String(p)));return true}
function openCard(){const c=location.hash.match(/^#card-(\\d+)$/);if(!c)return;const n=+c[1];
if(openPage(Math.ceil(n/PAGE))){const el=document.getElementById('card-'+n);if(el){el.scrollIntoView();document.body.dataset.opened=el.id}}}
window.addEventListener('hashchange',openCard);openCard();
document.body.dataset.ready='1';
"""


def write_html(table: pl.DataFrame, summary: Mapping[str, Any], retro, figure: Path | None, out: Path) -> None:
    e = html.escape
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(summary['title'])}</title>",
             f"<style>{CSS}</style></head><body><header><h1>{e(summary['title'])}</h1>",
             *[f"<p>{e(line)}</p>" for line in summary["lead"]], "</header><main>",
             *[f"<div class='warning'>Warning: {e(w)}</div>" for w in summary.get("warnings", ())],
             "<h2>Run</h2><div class='facts'>",
             *[f"<div class='fact'><b>{e(k)}</b>{e(str(v))}</div>" for k, v in facts(table, summary).items()], "</div>"]
    if summary.get("trust"):
        parts += ["<h2>How far to trust it</h2>", _html_table(pl.DataFrame(summary["trust"]), "trust"),
                  f"<p class='small'>{e(summary['trust_note'])}</p>"]
    if retro is not None:
        parts.append("<h2>Retrospective evaluation</h2>")
        for i, (title, df) in enumerate(retro_tables(retro)):
            parts += [f"<h3>{e(title)}</h3>", f"<div class='wide'>{_html_table(df, 'retro' if i == 0 else f'retro-{i}')}</div>"]
        if figure is not None and figure.is_file():
            data = base64.b64encode(figure.read_bytes()).decode()
            parts.append(f"<p><img alt='precision at K' style='max-width:720px' src='data:image/png;base64,{data}'></p>")
    rows = list(table.iter_rows(named=True))
    pages = [rows[i : i + CARDS_PER_PAGE] for i in range(0, len(rows), CARDS_PER_PAGE)] or [[]]
    pager = " ".join(f"<a href='#card-{page[0]['rank']}' data-page='{p}'{' class=current' if p == 1 else ''}>"
                     f"{page[0]['rank']}-{page[-1]['rank']}</a>" for p, page in enumerate(pages, 1) if page)
    parts += ["<h2>Ranked hypotheses</h2>",
              "<input id='filter' placeholder='filter (name, verdict, region ...)' oninput='filterRows(this.value)'>",
              _ranked_table(table), "<h2>Evidence cards</h2>",
              f"<div id='pager'>cards {pager}</div>" if len(pages) > 1 else "",
              "<div id='cards' data-page='1'>", *(card(row) for row in pages[0]), "</div><div id='pages'>",
              *(f"<template id='cards-page-{p}'>{''.join(card(row) for row in page)}</template>"
                for p, page in enumerate(pages[1:], 2)),
              f"</div></main><script>{JS % CARDS_PER_PAGE}</script></body></html>"]
    (out / "index.html").write_text("".join(parts))


def _verdict_tag(verdict: str) -> str:
    return f"<span class='tag {html.escape(verdict)}'>{html.escape(verdict)}</span>"


def _ranked_table(table: pl.DataFrame) -> str:
    e = html.escape
    head = ("<table id='ranked'><thead><tr><th>rank</th><th>GNN rank</th><th>left</th><th>right</th><th>GNN score</th>"
            "<th>region</th><th>verdict</th><th>confidence</th><th>future</th></tr></thead><tbody>")
    rows = []
    for r in table.iter_rows(named=True):
        conf = "" if r["confidence"] is None else f"{r['confidence']:.2f}"
        future = "" if r["future_year"] is None else f"<span class='tag future'>{r['future_year']}</span>"
        rows.append(
            f"<tr><td class='num'><a href='#card-{r['rank']}'>{r['rank']}</a></td><td class='num'>{r['gnn_rank']}</td>"
            f"<td>{e(r['left'])}</td><td>{e(r['right'])}</td><td class='num'>{r['score']:.4f}</td>"
            f"<td>{e(r['region'])}</td><td data-v='{e(r['verdict'])}'>{_verdict_tag(r['verdict'])}</td>"
            f"<td class='num'>{conf}</td><td data-v='{r['future_year'] or ''}'>{future}</td></tr>")
    return head + "".join(rows) + "</tbody></table>"


def _html_table(df: pl.DataFrame, table_id: str) -> str:
    e = html.escape

    def cell(v):  # small values (an AP of 0.0005) keep two significant digits
        if isinstance(v, float):
            return f"<td class='num'>{v:.3f}</td>" if v == 0 or abs(v) >= 0.01 else f"<td class='num'>{v:.2g}</td>"
        return f"<td class='num'>{v}</td>" if isinstance(v, int) else f"<td>{e(str(v))}</td>"

    head = "".join(f"<th>{e(c)}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in df.iter_rows())
    return f"<table id='{table_id}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def card(r: Mapping[str, Any], anchor: str | None = None) -> str:
    """One evidence card in HTML (a row of ``COLUMNS``); ``anchor``: its element id (default
    ``card-<rank>``, the ranked table's links; the per-entity cards have their own)."""
    e = html.escape
    ev = json.loads(r["structured"]) if r["structured"] else None
    sentences = [s for s in (r["evidence"] or "").splitlines()[1:] if s.strip() and not s.startswith("Evidence:")]
    anchor = anchor or f"card-{r['rank']}"
    out = [f"<div class='card' id='{e(anchor)}'><h3>{r['rank']}. {e(r['statement'])}</h3>",
           f"<div class='meta'>{e(r['left'])} <span class='small'>(id {r['left_id']})</span> – {e(r['right'])} "
           f"<span class='small'>(id {r['right_id']})</span> · GNN score {r['score']:.4f} (GNN rank {r['gnn_rank']}) · "
           f"{e(REGION_TEXT[r['region']])} · verdict {_verdict_tag(r['verdict'])} "
           f"<span class='small'>({e(r['decided_by'])})</span>"]
    if r["future_year"] is not None:
        out.append(f" · <span class='tag future'>found in the literature in {r['future_year']}</span>")
    out.append(f"<br>graph distance {r['distance']}" + (" · <span class='tag hub'>hub pair</span>" if r["hub_pair"] else "")
               + f" · <span class='small'>among the listed: novelty-aware score {r['novelty']:.2f}, degree-adjusted "
               f"{r['degree_adjusted']:+.2f}</span></div>")
    if r["review"] is not None or r["reasoning"]:
        out.append(f"<div class='review'><b>{e(_review_head(r))}</b><br>{e(r['reasoning'] or '')}</div>")
    if ev is not None:
        out.append("<div class='cols'>")
        for side in ("left", "right"):
            end = ev[side]
            items = "".join(f"<li>{e(f['name'])} <span class='small'>(id {f['node']}, {e(f['edge_type'])}): "
                            f"<b>{e(f['style'])}</b> from count {f['count']}, norm {f['norm_count']:.2f}, "
                            f"w {f['weight']:.2f}, score {f['score']:.2f}</span></li>" for f in end["features"])
            out.append(f"<div><b>{e(end['name'])}</b> <span class='small'>(id {end['node']}, {e(end['node_type'])}, "
                       f"degree {end['degree']})</span><ul>{items or '<li>no associations of the evidence types</li>'}</ul></div>")
        out.append("</div>")
        paths = "".join(
            f"<li class='path'>{' → '.join(f'{e(n)} <span class=small>[{i}]</span>' for n, i in zip(p['names'], p['nodes']))} "
            f"<span class='small'>(<b>{e(p['strength'])}</b> from score {p['score']:.3f}"
            f"{', via a hub' if p['hub'] else ''}; counts {', '.join(map(str, p['counts']))})</span></li>"
            for p in ev["paths"])
        out.append(f"<b>Connecting paths</b> <span class='small'>({ev['paths_found']} found, best {len(ev['paths'])} "
                   f"shown)</span><ul>{paths or '<li>none within the hop limit</li>'}</ul>")
    out.append(f"<b>Evidence sentences</b><ul class='ev'>{''.join(f'<li>{e(s)}</li>' for s in sentences)}</ul>")
    if r["reviewer_evidence"]:
        out.append(f"<details><summary>What the reviewer read</summary><pre>{e(r['reviewer_evidence'])}</pre></details>")
    out.append("</div>")
    return "".join(out)
