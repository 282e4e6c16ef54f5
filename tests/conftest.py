from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

settings.register_profile("ppdm", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# CI explores the same examples on every run, so a red build always means a change broke something
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, database=None
)
settings.load_profile("ci" if os.environ.get("CI") else "ppdm")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The project's shared folder (papers, datasets, oracles); skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside the checkout")
    return SHARED
