"""The recommendation report in a real browser (see tests/test_browser.py): 1280 px wide
without overflow, its map loaded, the answer first with the winner's settings in the data's
units, within the page-height budget. Marked ``browser``; skipped without Chromium."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.browser

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import CHROMIUM, MAX_HEIGHT, WIDTH, ppdm, render  # noqa: E402

POLICY = """\
risk:
  record_linkage: 0.6
utility:
  weights: {sse_sst: 1}
techniques:
  mdav: {k: {low: 2, high: 40}}
  recode: {}
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    d = tmp_path_factory.mktemp("recommend")
    rng = np.random.default_rng(0)
    n = 200
    a = rng.normal(50, 10, n).round(2)
    pd.DataFrame({"a": a, "b": rng.normal(5, 2, n).round(2), "age": rng.integers(18, 90, n),
                  "sex": rng.choice(["f", "m"], n),
                  "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no")}).to_csv(d / "x.csv", index=False)
    (d / "policy.yaml").write_text(POLICY)
    ppdm("recommend", "x.csv", "--class", "label", "--qi", "sex,age", "--policy", "policy.yaml", "--out", "z.csv",
         "--trials", "16", "--seed", "1", "--experiment-seed", "--report", "r.html", cwd=d)
    return d / "r.html"


def test_recommendation_fits_1280_px_and_opens_with_the_winner(page: Path) -> None:
    seen = render(page)
    assert seen["innerWidth"] == WIDTH
    assert seen["scrollWidth"] <= seen["clientWidth"], f"the page is {seen['scrollWidth']} px wide: {seen['wide']}"
    assert not seen["wide"], f"elements past the right edge: {seen['wide']}"
    assert seen["images"] and all(img["complete"] and img["width"] > 0 for img in seen["images"])
    assert seen["scrollHeight"] <= MAX_HEIGHT, seen["scrollHeight"]
    assert seen["sections"][:2] == ["answer", "front"], seen["sections"]
    assert seen["firstTable"] == "release"
    html = page.read_text()
    assert html.index("in the data's units") < html.index('id="front"')
