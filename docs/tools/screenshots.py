"""Regenerate the screenshots of ppdm's two HTML reports shown in the docs.

    python docs/tools/screenshots.py [--out docs/img/report] [--chromium /usr/bin/chromium]

Releases the shipped credit table (complete records) with Gaussian noise, evaluates the
release with every measure (``ppdm evaluate --html``) and compares uniform noise, rounding
and GADP by 5-fold cross-validation (``ppdm compare --report``), then renders the top of
both pages in headless Chromium 1280 px wide: ``evaluation.png`` and ``comparison.png``.
Takes about a minute. Needs Chromium (Debian: ``apt-get install chromium``).
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
        ppdm("anonymize", "builtin:credit", "--missing", "drop", "--method", "gaussian-noise", "--param", "level=0.2",
             "--seed", "1", "--out", "credit_z.csv", cwd=work)
        ppdm("evaluate", "-x", "builtin:credit", "-z", "credit_z.csv", "--missing", "drop", "--measures", "all",
             "--html", "evaluation.html", cwd=work)
        ppdm("compare", "builtin:credit", "--missing", "drop", "--sweep", "uniform-noise:level=0,0.1,0.3",
             "--technique", "rounding:method=equal-width,k=5", "--technique", "gadp",
             "--measures", "rule_accuracy,prediction_accuracy,auc,ddr,idr", "--cv", "5", "--out", "comparison",
             "--report", "--title", "ppdm comparison on credit", cwd=work)
        screenshot(chromium, work / "evaluation.html", args.out / "evaluation.png")
        screenshot(chromium, work / "comparison" / "report.html", args.out / "comparison.png", height=1700)
    print(f"wrote {args.out / 'evaluation.png'} and {args.out / 'comparison.png'}")


if __name__ == "__main__":
    main()
