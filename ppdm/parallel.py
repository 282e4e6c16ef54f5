"""Threads for the compiled kernels.

A kernel that loops over many independent items (queries, records, column subsets) is compiled
serially with ``nogil=True`` and run here on disjoint ranges of its items, one range per task of
a shared thread pool. Numba's own ``parallel=True`` would do the same work, but compiling its
parallel loops costs several times a serial kernel's compile (about 7 CPU-seconds more per
kernel, paid on the first run of every fresh installation), and its default threading layer
refuses a parallel kernel launched from two threads at once; here any number of callers may
share the pool.

Every task writes only its own items' slots (or its own row of a per-chunk table), so the result
does not depend on how the items are split or in which order the tasks run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: ranges per thread: enough that a slow range does not leave the other threads idle
CHUNKS_PER_THREAD = 8

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_local = threading.local()


def threads() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def n_chunks(n: int) -> int:
    """How many ranges ``n`` items are cut into: :data:`CHUNKS_PER_THREAD` per thread, at
    most one per item, at least one."""
    return max(1, min(n, CHUNKS_PER_THREAD * threads()))


def chunk_range(c: int, n: int, chunks: int) -> tuple[int, int]:
    """Items ``[lo, hi)`` of range ``c`` when ``n`` items are cut into ``chunks`` ranges."""
    size = (n + chunks - 1) // chunks
    return min(n, c * size), min(n, (c + 1) * size)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(threads(), thread_name_prefix="ppdm-kernel",
                                       initializer=_mark_worker)
        return _pool


def _mark_worker() -> None:
    _local.worker = True


def run_chunks(kernel: Callable[..., Any], n: int, *args: Any, chunks: int | None = None) -> int:
    """Call ``kernel(c, lo, hi, *args)`` for every range ``c`` of ``n`` items, ``[lo, hi)``
    from :func:`chunk_range`, on the shared threads; returns the number of ranges.

    ``kernel`` must be compiled with ``nogil=True`` (or the threads take turns) and must write
    only range ``c``'s own output. A call from inside a task (a kernel run by a kernel's
    caller that already runs on the pool) runs its ranges in its own thread, so the pool never
    waits on itself."""
    chunks = n_chunks(n) if chunks is None else max(1, chunks)
    bounds = [chunk_range(c, n, chunks) for c in range(chunks)]
    if chunks == 1 or threads() == 1 or getattr(_local, "worker", False):
        for c, (lo, hi) in enumerate(bounds):
            kernel(c, lo, hi, *args)
        return chunks
    futures = [_executor().submit(kernel, c, lo, hi, *args) for c, (lo, hi) in enumerate(bounds)]
    for f in futures:
        f.result()  # re-raises a kernel's error in the caller
    return chunks
