"""The discovery report in a real headless browser (Debian's chromium): it renders offline (a
screenshot with content, not a blank page), its script runs, a sorted link sorts the table, the
header says whether the graph is whole or a sample, and a named entity's card opens by its link.
Marked slow: `make test-all` (which installs chromium when root) runs them."""

import re
import shutil
import subprocess

import numpy as np
import pytest

from scripted_server import Reply, ScriptedServer, ok_review
from test_discover import _cfg

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(*args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: the test may run as root in a container; no network is needed (the page is one file)
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install -y chromium)")
def test_report_renders_and_sorts_in_a_headless_browser(tmp_path):
    from hygrail.discovery.run import main

    with ScriptedServer(default=Reply(ok_review("yes", 0.8, "Both share a conductive carbon network."))) as server:
        main(_cfg(tmp_path, "discover.cutoff=2020", url=server.base_url))
    page = next((tmp_path / "discover").rglob("index.html"))
    shot = tmp_path / "shot.png"
    _chromium("--window-size=1280,1600", f"--screenshot={shot}", page.as_uri())
    import matplotlib.image

    img = matplotlib.image.imread(shot)
    assert img.shape[:2] == (1600, 1280)
    # header band, tables, the embedded figure: many colours, not an empty or error page
    colours = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 200 and img[..., :3].std() > 0.05

    dom = _chromium("--dump-dom", page.as_uri() + "#sort=GNN score").stdout
    assert 'data-ready="1"' in dom, "the page's script did not run to the end"
    body = dom.split('id="ranked"')[1].split("</table>")[0]
    scores = [float(s) for s in re.findall(r'<td class="num">(\d\.\d{4})</td>', body)]
    assert len(scores) >= 40 and scores == sorted(scores)  # #sort=GNN score: ascending


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install -y chromium)")
def test_a_card_link_opens_the_card_deep_in_a_long_list(tmp_path):
    """index.html#card-N opens card N of a 1,234-card list, which sits on the 6th page of 200 (a
    <template> until then), and the first page stays the one shown without a hash."""
    import polars as pl

    from hygrail.discovery.cards import COLUMNS, write_html

    n = 1234
    rows = [{"rank": i, "gnn_rank": i, "left": f"M{i}", "right": f"A{i}", "score": 0.5, "region": "routed",
             "verdict": "unreviewed", "decided_by": "routed", "review": None, "confidence": None, "reasoning": None,
             "statement": f"M{i} for A{i}.", "evidence": "", "reviewer_evidence": None, "structured": None,
             "future_year": None, "distance": 3, "hub_pair": False, "novelty": 0.5, "degree_adjusted": 0.0,
             "left_id": i, "right_id": n + i} for i in range(1, n + 1)]
    table = pl.DataFrame(rows, schema_overrides={"review": pl.String, "confidence": pl.Float64, "reasoning": pl.String,
                                                 "reviewer_evidence": pl.String, "structured": pl.String,
                                                 "future_year": pl.Int32}).select(COLUMNS)
    write_html(table, {"title": "t", "lead": [], "facts": {}}, None, None, tmp_path)
    page = tmp_path / "index.html"
    dom = _chromium("--dump-dom", page.as_uri() + "#card-1100").stdout
    assert 'data-opened="card-1100"' in dom and 'id="cards" data-page="6"' in dom
    live = dom.split('id="cards"')[1].split('id="pages"')[0]
    assert 'id="card-1100"' in live and 'id="card-1"' not in live  # page 6 shown, page 1 put away
    first = _chromium("--dump-dom", page.as_uri()).stdout
    assert 'id="cards" data-page="1"' in first and 'data-opened' not in first


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install -y chromium)")
@pytest.mark.parametrize("sample", [None, 1500])
def test_the_header_says_what_graph_and_an_entity_has_its_cards(tmp_path, sample):
    """Issue #36: the page never said a sample was used, and per-entity rows had no evidence cards.
    In the browser, the header says "whole graph" or "a N-node sample: a smoke test"; the named
    entity's section links each of its listed candidates to its card, and a card opened by its link
    shows the pair, the verdict with the rule that gave it, and the evidence."""
    from hygrail.data import load_kg
    from hygrail.discovery.run import main
    from hygrail.stages import plain

    extra = [f"+data.subgraph_nodes={sample}"] if sample else []
    cfg = _cfg(tmp_path, "discover.review_budget.candidates=0", "discover.review_budget.val=0",
               "discover.review_budget.test=0", "discover.entity_k=4", "discover.entity_cards=2", *extra)
    kg = load_kg(plain(cfg.data))
    chm = int(next(n for n in kg.nodes_of_type("CHM") if kg.degree[n] > 2))
    cfg.discover.entities = [chm]
    main(cfg)
    page = next((tmp_path / "discover").rglob("index.html"))
    dom = _chromium("--dump-dom", page.as_uri() + f"#entity-{chm}-card-2").stdout
    assert 'data-ready="1"' in dom, "the page's script did not run to the end"
    h1 = re.search(r"<header><h1>(.*?)</h1>", dom).group(1)
    where = f"a {sample:,}-node sample: a smoke test; it keeps a fraction of each entity" if sample else "whole graph)"
    assert h1.startswith(f"HyGRAIL discovery: CHM-APL hypotheses (matkg_synthetic, {where}")
    section = dom.split(f"CHM '{kg.label(chm)}' (id {chm}): its best 4 of")[1]
    table = section.split("</table>")[0]
    assert table.count(f'href="#entity-{chm}-card-') == 2 and table.count("<tr>") == 5  # header + 4 rows
    card = section.split(f'id="entity-{chm}-card-2"')[1].split('<div class="card"')[0]
    assert f"(id {chm})" in card and "GNN score" in card and "verdict <span class=\"tag " in card
    assert re.search(r"\((GNN: score \d\.\d{4} (above b\*|below a\*) \d\.\d{4}|routed, beyond the review budget)", card)
    assert "Evidence sentences" in card and "Connecting paths" in card
    # the entity's cards are apart from the ranked table's: card-1 is still the ranked table's first
    assert dom.count('id="card-1"') == 1 and f'id="entity-{chm}-card-3"' not in dom


# The question page (discover.entities_only, issue #56), read as a browser lays it out: a probe page frames
# it at 1280 x 900 and writes what the first screen shows into its own DOM, which --dump-dom prints.
PROBE = """<!doctype html><html><body style="margin:0"><iframe id="f" src="%s" style="width:1280px;height:900px;border:0">
</iframe><script>
document.getElementById('f').addEventListener('load', () => {
  const doc = document.getElementById('f').contentDocument, seen = [];
  doc.querySelectorAll('h1, h2, p, th, td, summary').forEach(el => {
    const r = el.getBoundingClientRect(), box = el.closest('details');
    const hidden = box && !box.open && el.tagName !== 'SUMMARY';  // inside a closed <details>: not shown
    if (!hidden && r.top < 900 && r.bottom > 0 && r.height > 0) seen.push(el.textContent.trim());
  });
  const out = document.createElement('pre');
  out.id = 'first-screen';
  out.textContent = JSON.stringify({ready: doc.body.dataset.ready, seen: seen,
                                    open: [...doc.querySelectorAll('details')].filter(d => d.open).length});
  document.body.append(out);
});
</script></body></html>"""


def first_screen(tmp_path, page) -> dict:
    import html as html_lib
    import json

    probe = tmp_path / "probe.html"
    probe.write_text(PROBE % page.as_uri())
    dom = _chromium("--allow-file-access-from-files", "--virtual-time-budget=20000", "--dump-dom", probe.as_uri()).stdout
    return json.loads(html_lib.unescape(dom.split('<pre id="first-screen">')[1].split("</pre>")[0]))


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install -y chromium)")
def test_a_question_page_opens_on_its_question_list_and_back_test_sentence(tmp_path, tmp_path_factory):
    """Two queries in a row keep two pages; each page's first screen shows the question, the list with its
    ids, the back-test sentence and no routing label; its CSV holds the listed rows."""
    import polars as pl

    from test_question_page import ask, tiny_hpo

    folder = tiny_hpo(tmp_path_factory.mktemp("hpo") / "hpo")
    first = ask(tmp_path, folder, ["Noonan syndrome 1"])
    second = ask(tmp_path, folder, ["ORPHA:558", "Noonan syndrome"])
    assert first != second
    for out, title, entity in ((first, "Clinical features not yet recorded for Noonan syndrome 1", "OMIM:163950"),
                               (second, "Clinical features not yet recorded for ORPHA:558, Noonan syndrome", "ORPHA:558")):
        screen = first_screen(tmp_path, out / "index.html")
        text = "\n".join(screen["seen"])
        assert screen["ready"] == "1" and screen["open"] == 0  # the recorded list and the run's details: closed
        assert screen["seen"][0] == title
        assert "For 41% of diseases like this one (known at the 2018 cutoff; 5,000 diseases), one of the first 10 " \
               "of this list was recorded within 3 years" in text
        rows = pl.read_csv(out / "lists.csv").filter(pl.col("entity_id") == entity)
        assert rows.height == 6 and rows["partner"][0] in screen["seen"] and rows["partner_id"][0] in screen["seen"]
        for label in ("auto_accept", "auto_reject", "routed", "band", "b*", "region", "verdict", "threshold", "seed"):
            assert label not in text, label
        # what is recorded stays folded: its summary shows, its table (headed 'references') does not
        assert any(x.startswith("Recorded for it: ") for x in screen["seen"]) and "references" not in screen["seen"]
