"""ppdm.parallel: the ranges cover every item once, a kernel's error reaches the caller, and a
call made from inside a task runs in its own thread instead of waiting on the pool."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from numba import njit

from ppdm import parallel
from ppdm.parallel import chunk_range, chunks_for, run_chunks


@pytest.mark.parametrize(("n", "chunks"), [(0, 1), (1, 1), (7, 3), (10, 10), (10, 4), (5, 8)])
def test_ranges_cover_every_item_once(n: int, chunks: int) -> None:
    seen = np.zeros(n, dtype=int)
    for c in range(chunks):
        lo, hi = chunk_range(c, n, chunks)
        assert 0 <= lo <= hi <= n
        seen[lo:hi] += 1
    assert (seen == 1).all()


def test_chunks_for_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    assert chunks_for(0) == 1 and chunks_for(3) == 3 and chunks_for(100) == 16


@njit(nogil=True)
def _square(c, lo, hi, x, out):  # type: ignore[no-untyped-def]
    for i in range(lo, hi):
        out[i] = x[i] * x[i]


def test_compiled_kernel_on_the_pool_equals_a_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    x = np.arange(1000, dtype=np.float64)
    out = np.full(1000, np.nan)
    assert run_chunks(_square, 1000, x, out) == 16
    assert np.array_equal(out, x * x)


def test_error_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "threads", lambda: 2)

    def kernel(c: int, lo: int, hi: int) -> None:
        if c == 2:
            raise ValueError("range 2 failed")

    with pytest.raises(ValueError, match="range 2 failed"):
        run_chunks(kernel, 10, chunks=4)


def test_call_from_a_task_runs_in_that_task(monkeypatch: pytest.MonkeyPatch) -> None:
    # with one pool thread, a task waiting on the pool for its inner ranges would never finish
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    names: list[str] = []

    def inner(c: int, lo: int, hi: int, out: list[str]) -> None:
        out.append(threading.current_thread().name)

    def outer(c: int, lo: int, hi: int) -> None:
        mine: list[str] = []
        run_chunks(inner, 4, mine, chunks=4)
        assert set(mine) == {threading.current_thread().name}
        names.extend(mine)

    run_chunks(outer, 4, chunks=4)
    assert len(names) == 16 and all(n.startswith("ppdm-kernel") for n in names)
