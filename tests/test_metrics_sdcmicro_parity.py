"""Parity with sdcMicro 5.8.1 on its own benchmark files (oracles in shared/oracles/sdcmicro)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppdm.metrics.info_loss import il1s, sse_sst
from ppdm.metrics.risk import idr

PAIRS = [
    ("tarragona", "tarragona_mdav_k3"),
    ("tarragona", "tarragona_mdav_k10"),
    ("tarragona", "tarragona_addnoise150"),
    ("cascrefmicrodata", "casc_mdav_k5"),
]
REL = 1e-9


def _load(shared_dir, original: str, masked: str):
    x = pd.read_csv(shared_dir / "datasets" / f"{original}.csv")
    z = pd.read_csv(shared_dir / "oracles" / "sdcmicro" / f"{masked}.csv")
    meta = json.loads((shared_dir / "oracles" / "sdcmicro" / f"{masked}.json").read_text())
    return x[meta["vars"]], z[meta["vars"]], meta["metrics"]


@pytest.mark.parametrize(("original", "masked"), PAIRS)
def test_parity_with_sdcmicro(shared_dir, original, masked):
    x, z, ref = _load(shared_dir, original, masked)
    r = il1s(x, z)
    assert r.value == pytest.approx(ref["IL1s"], rel=REL)
    assert r.mean == pytest.approx(ref["IL1s_mean"], rel=REL)
    assert il1s(x, z, form="mean").value == pytest.approx(ref["IL1s_mean"], rel=REL)
    assert idr(x, z, k=0.05).value == pytest.approx(ref["dRisk"], rel=REL, abs=0)
    s = sse_sst(x, z)
    assert s.sse == pytest.approx(ref["SSE"], rel=REL)
    assert s.sst == pytest.approx(ref["SST"], rel=REL)
    assert s.value == pytest.approx(ref["SSE_over_SST_pct"], rel=REL)
    zs = sse_sst(x, z, standardize="zscore")
    assert zs.sse == pytest.approx(ref["zSSE"], rel=REL)
    assert zs.sst == pytest.approx(ref["zSST"], rel=REL)
    assert zs.value == pytest.approx(ref["zSSE_over_zSST_pct"], rel=REL)
