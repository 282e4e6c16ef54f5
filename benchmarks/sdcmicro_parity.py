"""Print the sdcMicro parity table of docs/measures.md: ``python benchmarks/sdcmicro_parity.py``.

Reads the original tables from ``../shared/datasets`` and sdcMicro 5.8.1's masked tables
and measure values from ``../shared/oracles/sdcmicro``, and prints ppdm's value beside
sdcMicro's for IL1s (sum and mean), dRisk (IDR) and SSE/SST, with the relative difference.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAIRS = [
    ("tarragona", "tarragona_mdav_k3"),
    ("tarragona", "tarragona_mdav_k10"),
    ("tarragona", "tarragona_addnoise150"),
    ("cascrefmicrodata", "casc_mdav_k5"),
]


def rows(shared: Path) -> list[dict]:
    from ppdm.metrics.info_loss import il1s, sse_sst
    from ppdm.metrics.risk import ddr, idr

    out = []
    for original, masked in PAIRS:
        meta = json.loads((shared / "oracles" / "sdcmicro" / f"{masked}.json").read_text())
        x = pd.read_csv(shared / "datasets" / f"{original}.csv")[meta["vars"]]
        z = pd.read_csv(shared / "oracles" / "sdcmicro" / f"{masked}.csv")[meta["vars"]]
        ref = meta["metrics"]
        r = il1s(x, z)
        s = sse_sst(x, z)
        zs = sse_sst(x, z, standardize="zscore")
        mine = {"IL1s": r.sum, "IL1s_mean": r.mean, "dRisk": idr(x, z).value,
                "SSE_over_SST_pct": s.value, "zSSE_over_zSST_pct": zs.value}
        for key, val in mine.items():
            want = ref[key]
            rel = abs(val - want) / abs(want) if want else abs(val - want)
            out.append({"pair": masked, "measure": key, "sdcMicro": want, "ppdm": val, "rel_diff": rel})
        out.append({"pair": masked, "measure": "DDR (ppdm only)", "sdcMicro": float("nan"),
                    "ppdm": ddr(x, z).value, "rel_diff": float("nan")})
    return out


def main() -> int:
    shared = ROOT.parent / "shared"
    if not shared.is_dir():
        print(f"{shared} not found", file=sys.stderr)
        return 2
    print("| masked table | measure | sdcMicro 5.8.1 | ppdm | relative difference |")
    print("|---|---|---|---|---|")
    for r in rows(shared):
        rel = "" if r["rel_diff"] != r["rel_diff"] else f"{r['rel_diff']:.1e}"
        ref = "" if r["sdcMicro"] != r["sdcMicro"] else f"{r['sdcMicro']:.12g}"
        print(f"| {r['pair']} | {r['measure']} | {ref} | {r['ppdm']:.12g} | {rel} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
