"""The discovery report in a real headless browser (Debian's chromium): it renders offline (a
screenshot with content, not a blank page), its script runs, and a sorted link sorts the table."""

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
