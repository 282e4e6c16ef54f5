from __future__ import annotations

import math
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

# Property tests name the examples they need for a thorough search (@settings(max_examples=N), or
# the profile's 100). The default run tries a third of them, at least 10, to stay in its time
# budget (docs/testing.md); PPDM_HYPOTHESIS=thorough tries them all, as .ci/run's slow step does
# for every property test (`-m "slow or hypothesis"`), so no search is lost, only moved.
THOROUGH = os.environ.get("PPDM_HYPOTHESIS", "") == "thorough"
LIGHT_SHARE, LIGHT_FLOOR = 1 / 3, 10


def light_examples(n: int) -> int:
    """The examples the default run tries of a property test that asks for ``n``."""
    return n if THOROUGH else min(n, max(LIGHT_FLOOR, math.ceil(n * LIGHT_SHARE)))


#: the tests that cost the most CPU (measured with PPDM_TEST_CPU, below): each line is its CPU
#: seconds and node id. They are marked ``slow`` here, so the default run stays within its budget
#: and the slow step of .ci/run runs them (docs/testing.md, "Time, warnings and coverage").
HEAVY = Path(__file__).with_name("heavy_tests.tsv")


def _heavy_ids() -> set[str]:
    if not HEAVY.is_file():
        return set()
    lines = HEAVY.read_text(encoding="utf-8").splitlines()
    return {ln.split("\t", 1)[1] for ln in lines if ln.strip() and not ln.startswith("#") and "\t" in ln}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    heavy = _heavy_ids()
    for item in items:
        if item.nodeid in heavy:
            item.add_marker(pytest.mark.slow)
    if THOROUGH:
        return
    done: set[int] = set()
    for item in items:
        fn = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))  # a method's function
        # @given tests carry their resolved settings here (hypothesis reads them when the test
        # runs); a parametrized test is one function seen once
        chosen = getattr(fn, "_hypothesis_internal_use_settings", None)
        if fn is None or chosen is None or not hasattr(fn, "hypothesis") or id(fn) in done:
            continue
        done.add(id(fn))
        fn._hypothesis_internal_use_settings = settings(chosen, max_examples=light_examples(chosen.max_examples))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The project's shared folder (papers, datasets, oracles); skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside the checkout")
    return SHARED


# PPDM_TEST_CPU=<file> appends one line per test: its CPU seconds (this process and the processes
# it waited for: setup, call and teardown together) and its node id. Wall time (--durations) swells
# on a shared machine; CPU time is what the suite's budget counts (docs/testing.md).
_CPU_LOG = os.environ.get("PPDM_TEST_CPU")


def _cpu_seconds() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if _CPU_LOG:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
        start = _cpu_seconds()
        yield
        with open(_CPU_LOG, "a", encoding="utf-8") as log:
            log.write(f"{_cpu_seconds() - start:.3f}\t{item.nodeid}\n")
