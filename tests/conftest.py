from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# OpenMP (scikit-learn's compiled estimators; ppdm's own kernels use ppdm.parallel's threads) lets
# idle threads spin for a while after each parallel loop: with two workers on two cores that
# spinning takes CPU from the other worker (a loop of short parallel calls spent 4.7 times the CPU it
# did with passive waiting). ppdm's command line asks for passive waiting the same way
# (ppdm/cli/app.py); it must be set before OpenMP starts, so here.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

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


# PPDM_NUMBA_LOG=<file> appends one line per Numba compilation (a kernel and signature the cache did
# not hold): CPU seconds with and without the kernels it compiled inside, the process id, the
# kernel, its argument types and the test that was running. It shows which kernels (and how many
# signatures of each) a fresh clone pays for (docs/testing.md).
_NUMBA_LOG = os.environ.get("PPDM_NUMBA_LOG")

if _NUMBA_LOG:
    import time

    from numba.core import event as _numba_event

    class _CompileLog(_numba_event.Listener):  # type: ignore[misc]
        def __init__(self) -> None:
            self.stack: list[list[float]] = []  # [start, seconds spent in nested compilations]

        def on_start(self, event: _numba_event.Event) -> None:
            self.stack.append([time.process_time(), 0.0])

        def on_end(self, event: _numba_event.Event) -> None:
            start, nested = self.stack.pop()
            total = time.process_time() - start
            if self.stack:
                self.stack[-1][1] += total
            disp, args = event.data["dispatcher"], event.data["args"]
            name = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
            with open(_NUMBA_LOG, "a", encoding="utf-8") as log:
                test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
                log.write(f"{total:.3f}\t{total - nested:.3f}\t{os.getpid()}\t{name}\t{args}\t{test}\n")

    _numba_event.register("numba:compile", _CompileLog())


# pytest-xdist's workers share Numba's on-disk cache (``cache=True`` writes each kernel beside its
# module), but each compiles a kernel it meets before the other has saved it: in a fresh clone both
# workers compiled a third of the kernels twice. Here a worker compiles a kernel (or loads it from
# the cache) only while holding a lock file named after it, so the second worker waits (waiting
# costs no CPU) and then finds the first one's result in the cache. Only workers take the locks; a
# lock held for over two minutes is ignored, so a stuck worker cannot stop the other.
if os.environ.get("PYTEST_XDIST_WORKER"):
    import fcntl
    import hashlib
    import tempfile
    import time

    from numba.core import dispatcher as _numba_dispatcher
    from numba.core.compiler_lock import global_compiler_lock

    _LOCKS = Path(tempfile.gettempdir()) / f"ppdm-numba-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]}"
    _held: dict[str, int] = {}  # lock name -> depth, as compiling a kernel compiles the kernels it calls
    _compile = _numba_dispatcher.Dispatcher.compile

    def _locked_compile(self, sig):  # type: ignore[no-untyped-def]
        name = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        with global_compiler_lock:  # one thread of this process compiles at a time (Numba's rule too)
            if name in _held:
                _held[name] += 1
                try:
                    return _compile(self, sig)
                finally:
                    _held[name] -= 1
            _LOCKS.mkdir(exist_ok=True)
            with open(_LOCKS / f"{name}.lock", "w") as fh:
                give_up = time.monotonic() + 120
                while True:
                    try:
                        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > give_up:
                            break
                        time.sleep(0.05)
                _held[name] = 0
                try:
                    return _compile(self, sig)
                finally:
                    del _held[name]  # closing the file releases the lock

    _numba_dispatcher.Dispatcher.compile = _locked_compile
