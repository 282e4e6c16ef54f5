"""Regenerate the screenshots of ppdm's two HTML reports shown in the docs.

    python docs/tools/screenshots.py [--out docs/img/report] [--chromium /usr/bin/chromium]

Releases the shipped adult table (complete records) with MDAV (k = 5), evaluates the
release with the default measures (``ppdm evaluate --html``), and compares uniform noise,
MDAV and GADP on the shipped credit table by 5-fold cross-validation with the default
measures (``ppdm compare --report``), then renders the top of both pages in headless
Chromium 1280 px wide: ``evaluation.png`` and ``comparison.png``. Takes a few minutes.
Needs Chromium (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def find_chromium(given: str | None = None) -> str:
    for name in ([given] if given else []) + ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(name) if name else None
        if path:
            return path
    sys.exit("Chromium is not installed (Debian: apt-get install chromium); give its path with --chromium")


def ppdm(*args: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-m", "ppdm.cli", *args], cwd=cwd, env=env, check=True,
                   stdout=subprocess.DEVNULL)


def screenshot(chromium: str, page: Path, png: Path, *, width: int = 1280, height: int = 1500) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                        f"--screenshot={png}", page.as_uri()], check=True, capture_output=True, timeout=120)
    if not png.is_file() or png.stat().st_size == 0:
        sys.exit(f"Chromium wrote no screenshot of {page}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "report")
    ap.add_argument("--chromium", default=None)
    args = ap.parse_args()
    chromium = find_chromium(args.chromium)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ppdm("anonymize", "builtin:adult", "--missing", "drop", "--method", "mdav", "--param", "k=5",
             "--seed", "1", "--out", "adult_z.csv", cwd=work)
        ppdm("evaluate", "-x", "builtin:adult", "-z", "adult_z.csv", "--missing", "drop", "--seed", "1",
             "--html", "evaluation.html", cwd=work)
        ppdm("compare", "builtin:credit", "--missing", "drop", "--sweep", "uniform-noise:level=0.1,0.3",
             "--sweep", "mdav:k=3,10", "--technique", "gadp", "--cv", "5", "--seed", "0", "--out", "comparison",
             "--report", "--title", "ppdm comparison on credit", cwd=work)
        screenshot(chromium, work / "evaluation.html", args.out / "evaluation.png", height=1400)
        screenshot(chromium, work / "comparison" / "report.html", args.out / "comparison.png", height=1500)
    print(f"wrote {args.out / 'evaluation.png'} and {args.out / 'comparison.png'}")


if __name__ == "__main__":
    main()
