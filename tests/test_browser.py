"""Both HTML reports in a real browser: headless Chromium renders them 1280 px wide; the
page must not overflow horizontally and every image must load. Marked ``browser``
(``python -m pytest -m browser``); skipped when Chromium is not installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTH = 1280

# appended to a copy of the page: once everything has loaded it writes what the test checks
PROBE = """
<script>
window.addEventListener("load", function () {
  var doc = document.documentElement;
  var wide = Array.prototype.filter.call(document.body.querySelectorAll("*"), function (el) {
    var inScroller = el.closest(".scroll") !== null && !el.classList.contains("scroll");
    return !inScroller && el.getBoundingClientRect().right > doc.clientWidth + 1;
  }).map(function (el) { return el.tagName + (el.id ? "#" + el.id : ""); });
  var out = {scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, innerWidth: window.innerWidth,
             scrollHeight: doc.scrollHeight,
             images: Array.prototype.map.call(document.images, function (img) {
               return {alt: img.alt, complete: img.complete, width: img.naturalWidth}; }),
             wide: wide.slice(0, 10), title: document.title};
  var pre = document.createElement("pre");
  pre.id = "ppdm-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def render(page: Path) -> dict:
    """What the probe saw after Chromium loaded ``page`` at :data:`WIDTH` px."""
    html = page.read_text(encoding="utf-8")
    probed = page.with_name(page.stem + ".probe.html")
    probed.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},900",
                              "--virtual-time-budget=10000", "--dump-dom", probed.as_uri()],
                             capture_output=True, text=True, timeout=180)
    m = re.search(r'<pre id="ppdm-probe">(.*?)</pre>', out.stdout, flags=re.S)
    assert m, f"Chromium did not run the probe (exit {out.returncode}): {out.stderr[-500:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                      .replace("&gt;", ">"))


def ppdm(*args: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "ppdm.cli", *args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    d = tmp_path_factory.mktemp("reports")
    ppdm("anonymize", "builtin:credit", "--missing", "drop", "--method", "gaussian-noise", "--param", "level=0.2",
         "--seed", "1", "--out", "z.csv", cwd=d)
    ppdm("evaluate", "-x", "builtin:credit", "-z", "z.csv", "--missing", "drop", "--measures", "all",
         "--html", "evaluation.html", cwd=d)
    ppdm("compare", "builtin:credit", "--missing", "drop", "--sweep", "uniform-noise:level=0,0.1,0.3",
         "--technique", "rounding:method=equal-width,k=5", "--technique", "gadp",
         "--measures", "rule_accuracy,rule_support_distance,prediction_accuracy,auc,f_measure,ddr,idr",
         "--cv", "3", "--out", "comparison", "--report", cwd=d)
    return {"evaluation": d / "evaluation.html", "comparison": d / "comparison" / "report.html"}


@pytest.mark.parametrize("which", ["evaluation", "comparison"])
def test_report_fits_1280_px_and_every_image_loads(reports: dict[str, Path], which: str) -> None:
    seen = render(reports[which])
    assert seen["innerWidth"] == WIDTH
    assert seen["scrollWidth"] <= seen["clientWidth"], f"the page is {seen['scrollWidth']} px wide: {seen['wide']}"
    assert not seen["wide"], f"elements past the right edge: {seen['wide']}"
    for img in seen["images"]:
        assert img["complete"] and img["width"] > 0, f"image {img['alt']!r} did not load"
    if which == "comparison":
        alts = [img["alt"] for img in seen["images"]]
        assert any(a.startswith("risk–utility map") for a in alts) and len(alts) >= 8
    else:
        # every measure of `--measures all`, details folded: far from the 16 000 px it once took
        assert seen["scrollHeight"] < 12_000, seen["scrollHeight"]


def test_the_probe_sees_an_overflow_and_a_broken_image(tmp_path: Path) -> None:
    """The checks above can fail: a too-wide block and a missing image are caught."""
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><div style="width:2000px">wide</div>'
                    '<img alt="gone" src="missing.png"></body></html>')
    seen = render(page)
    assert seen["scrollWidth"] > seen["clientWidth"] and "DIV" in seen["wide"]
    assert seen["images"] == [{"alt": "gone", "complete": True, "width": 0}]
