"""The recipes page in a real headless browser (Debian's chromium; issue #56): its first screen (1280 x 800)
shows the question, the trust sentence and the first sets, and no developer block (the run details are
collapsed, below); two queries in a row keep two pages and two CSVs, each CSV holding every set the
page lists. Marked slow: `make test-all` (which installs chromium when root) runs them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import polars as pl
import pytest

from test_recipe_page import recipe, write_trust
from test_recipe_sets import ROOT, history

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
                                 reason="needs chromium (apt-get install -y chromium)")]
WIDTH, HEIGHT = 1280, 800
# Run in the page: where each part lies on the first screen, written into the DOM for --dump-dom to return.
PROBE = """<script>
const at = (q) => { const e = document.querySelector(q); return e ? e.getBoundingClientRect().top : null; };
const shown = (q) => [...document.querySelectorAll(q)].some(e => e.checkVisibility());
document.body.setAttribute("data-probe", JSON.stringify({
  height: window.innerHeight, question: at("#question"), trust: at(".trust"),
  first_set: at("table.sets tr:nth-child(2)"), third_set: at("table.sets tr:nth-child(4)"),
  run: at("#run"), run_open: document.querySelector("#run").open, run_facts_shown: shown("#run li"),
  recorded_shown: shown("section details tr")}));
</script>"""


def chromium(*args: str) -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    # --no-sandbox: the test may run as root in a container; the page is one offline file
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={WIDTH},{HEIGHT}", "--dump-dom", *args],
                          capture_output=True, text=True, timeout=120).stdout


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Two queries in a row, as a chemist asks them: the folders their pages went to."""
    from hydra import compose, initialize_config_dir

    from hygrail.recipes.page import main

    tmp = tmp_path_factory.mktemp("recipes")
    data = tmp / "recipes.json"
    data.write_text(json.dumps({"reactions": [recipe(m, pres, y, i) for i, (m, _, pres, y) in
                                              enumerate(history(), start=1)]}))
    write_trust(tmp / "trust.csv", [(2014, "seen", "all", 400, 0.814, 0.231), (2014, "unseen", "all", 300, 0.74, 0.2)])
    folders = []
    for targets in ("'BaTiO3, Li6PS5Cl, Ba0.5Sr0.5TiO3'", "Li6PS5Br"):
        with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
            cfg = compose("config", overrides=["task=recipes", "data=synthesis_recipes", f"data.path={data}",
                                               f"paths.outputs={tmp / 'out'}", "recipes.neighbours=10",
                                               "recipes.composed=10", f"recipes.trust={tmp / 'trust.csv'}",
                                               f"recipes.targets={targets}"])
        main(cfg)
        folders.append(max((tmp / "out" / "recipes").iterdir(), key=lambda p: p.stat().st_mtime_ns))
    return folders


def test_the_first_screen_shows_the_question_the_trust_sentence_and_the_sets(pages, tmp_path):
    page = (pages[0] / "index.html").read_text()
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"))
    dom = chromium(probe.as_uri())
    found = json.loads(re.search(r'data-probe="([^"]*)"', dom).group(1).replace("&quot;", '"'))
    screen = found["height"]  # the viewport: the window less what headless chromium keeps of its frame
    assert 600 <= screen <= HEIGHT
    for part in ("question", "trust", "first_set", "third_set"):
        assert 0 <= found[part] < screen, (part, found)  # on the first screen
    assert found["question"] < found["trust"] < found["first_set"]
    # the developer block: last, collapsed, nothing of it shown; the recorded sets collapsed too
    assert found["run"] > found["first_set"] and found["run_open"] is False and found["run_facts_shown"] is False
    assert found["recorded_shown"] is False
    assert "For 81% of targets like this one" in dom and "routing" not in dom and "log-odds" not in dom


def test_two_queries_keep_two_pages_and_two_csvs_with_every_listed_set(pages):
    assert len({p.name for p in pages}) == 2 and pages[0].name.startswith("BaTiO3+Li6PS5Cl+Ba0.5Sr0.5TiO3-")
    assert pages[1].name.startswith("Li6PS5Br-")
    for folder in pages:
        dom = chromium((folder / "index.html").as_uri())
        listed = []  # (target, rank, precursors) of every row of every sets table, as the browser rendered it
        for section in dom.split("<section class=\"target\">")[1:]:
            target = re.search(r"<h2>([^:<]+):", section).group(1)
            table = section.split('<table class="sets">')[1].split("</table>")[0]
            listed += [(target, int(rank), sets) for rank, sets in
                       re.findall(r'<tr><td>(\d+)</td><td class="set">([^<]+)</td>', table)]
        csv = pl.read_csv(folder / "sets.csv")
        assert listed and listed == list(csv.select("target", "rank", "precursors").iter_rows())
