"""The discovery written up for people: a ranked table (``hypotheses.parquet`` / ``.csv``), a
self-contained HTML report (``index.html``: no network, inline CSS and JS; a sortable, filterable
table and one card per hypothesis with its statement, score, verdict, the evidence sentences, the
endpoints' strongest associations and the connecting paths) and the same in Markdown
(``hypotheses.md``).

Every card's graph evidence is the Table 9 template rendering of the structured evidence of the
graph the GNN scored (retrieval is cheap; the reviewer's own text, e.g. an LLM summary, is shown
beside it when it differs). A card says how its verdict was reached: by the GNN outside the band,
by the LLM, or not yet (routed but beyond the review budget).
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any, Mapping

import polars as pl

# Columns of the ranked table, in order; ``structured`` holds the evidence object as JSON.
COLUMNS = ("rank", "gnn_rank", "left", "right", "score", "region", "verdict", "decided_by", "review", "confidence",
           "reasoning", "statement", "evidence", "reviewer_evidence", "structured", "future_year", "left_id",
           "right_id")
REGION_TEXT = {"auto_accept": "above b* (accepted by the GNN)", "routed": "in the band (LLM review)",
               "auto_reject": "below a* (rejected by the GNN)"}


def write_table(table: pl.DataFrame, out: Path) -> None:
    table.write_parquet(out / "hypotheses.parquet")
    table.write_csv(out / "hypotheses.csv")


def write_markdown(table: pl.DataFrame, summary: Mapping[str, Any], retro: pl.DataFrame | None, out: Path) -> None:
    lines = [f"# {summary['title']}", "", *[f"- {k}: {v}" for k, v in summary["facts"].items()], ""]
    if retro is not None:
        lines += ["## Retrospective evaluation", "", _md_table(by_metric(retro)), ""]
    cols = ("rank", "left", "right", "score", "region", "verdict", "confidence", "future_year")
    lines += ["## Ranked hypotheses", "", _md_table(table.select(cols)), "", "## Evidence cards", ""]
    for row in table.iter_rows(named=True):
        lines += [f"### {row['rank']}. {row['statement']}", "",
                  f"GNN score {row['score']:.4f} (rank {row['gnn_rank']}); {REGION_TEXT[row['region']]}; "
                  f"verdict: **{row['verdict']}** ({row['decided_by']})", ""]
        if row["review"] is not None:
            conf = "" if row["confidence"] is None else f", confidence {row['confidence']:.2f}"
            lines += [f"LLM review: {row['review']}{conf}. {row['reasoning'] or ''}", ""]
        lines += ["```", row["evidence"] or "", "```", ""]
    (out / "hypotheses.md").write_text("\n".join(lines))


def by_metric(retro: pl.DataFrame) -> pl.DataFrame:
    """The retrospective table for reading: one row per metric, one column per method."""
    return retro.drop("method").transpose(include_header=True, header_name="metric", column_names=retro["method"])


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
document.body.dataset.ready='1';
"""


def write_html(table: pl.DataFrame, summary: Mapping[str, Any], retro: pl.DataFrame | None, figure: Path | None,
               out: Path) -> None:
    e = html.escape
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(summary['title'])}</title>",
             f"<style>{CSS}</style></head><body><header><h1>{e(summary['title'])}</h1>",
             *[f"<p>{e(line)}</p>" for line in summary["lead"]], "</header><main>",
             "<h2>Run</h2><div class='facts'>",
             *[f"<div class='fact'><b>{e(k)}</b>{e(str(v))}</div>" for k, v in summary["facts"].items()], "</div>"]
    if retro is not None:
        parts += ["<h2>Retrospective evaluation</h2>", _html_table(by_metric(retro), "retro")]
        if figure is not None and figure.is_file():
            data = base64.b64encode(figure.read_bytes()).decode()
            parts.append(f"<p><img alt='precision at K' style='max-width:720px' src='data:image/png;base64,{data}'></p>")
    parts += ["<h2>Ranked hypotheses</h2>",
              "<input id='filter' placeholder='filter (name, verdict, region ...)' oninput='filterRows(this.value)'>",
              _ranked_table(table), "<h2>Evidence cards</h2>", *(_card(row) for row in table.iter_rows(named=True)),
              f"</main><script>{JS}</script></body></html>"]
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

    def cell(v):
        return f"<td class='num'>{v:.3f}</td>" if isinstance(v, float) else f"<td>{e(str(v))}</td>"

    head = "".join(f"<th>{e(c)}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in df.iter_rows())
    return f"<table id='{table_id}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _card(r: Mapping[str, Any]) -> str:
    e = html.escape
    ev = json.loads(r["structured"]) if r["structured"] else None
    sentences = [s for s in (r["evidence"] or "").splitlines()[1:] if s.strip() and not s.startswith("Evidence:")]
    out = [f"<div class='card' id='card-{r['rank']}'><h3>{r['rank']}. {e(r['statement'])}</h3>",
           f"<div class='meta'>GNN score {r['score']:.4f} (GNN rank {r['gnn_rank']}) · {e(REGION_TEXT[r['region']])} · "
           f"verdict {_verdict_tag(r['verdict'])} <span class='small'>({e(r['decided_by'])})</span>"]
    if r["future_year"] is not None:
        out.append(f" · <span class='tag future'>found in the literature in {r['future_year']}</span>")
    out.append("</div>")
    if r["review"] is not None or r["reasoning"]:
        conf = "" if r["confidence"] is None else f", confidence {r['confidence']:.2f}"
        out.append(f"<div class='review'><b>LLM review: {e(str(r['review']))}{conf}</b><br>{e(r['reasoning'] or '')}</div>")
    if ev is not None:
        out.append("<div class='cols'>")
        for side in ("left", "right"):
            end = ev[side]
            items = "".join(f"<li>{e(f['name'])} <span class='small'>({e(f['edge_type'])}, count {f['count']}, "
                            f"w {f['weight']:.2f}, {e(f['style'])})</span></li>" for f in end["features"])
            out.append(f"<div><b>{e(end['name'])}</b> <span class='small'>({e(end['node_type'])}, degree "
                       f"{end['degree']})</span><ul>{items or '<li>no associations of the evidence types</li>'}</ul></div>")
        out.append("</div>")
        paths = "".join(
            f"<li class='path'>{' → '.join(e(n) for n in p['names'])} <span class='small'>(score {p['score']:.3f}, "
            f"{e(p['strength'])}{', via a hub' if p['hub'] else ''}; counts {', '.join(map(str, p['counts']))})</span></li>"
            for p in ev["paths"])
        out.append(f"<b>Connecting paths</b> <span class='small'>({ev['paths_found']} found, best {len(ev['paths'])} "
                   f"shown)</span><ul>{paths or '<li>none within the hop limit</li>'}</ul>")
    out.append(f"<b>Evidence sentences</b><ul class='ev'>{''.join(f'<li>{e(s)}</li>' for s in sentences)}</ul>")
    if r["reviewer_evidence"]:
        out.append(f"<details><summary>What the reviewer read</summary><pre>{e(r['reviewer_evidence'])}</pre></details>")
    out.append("</div>")
    return "".join(out)
