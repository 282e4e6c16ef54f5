"""Timing and memory helpers for the benchmarks."""

from __future__ import annotations

import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def rss_mb() -> float:
    """Current resident set size in MiB (Linux)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def measure(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``fn`` once; return (result, wall seconds, peak RSS in MiB seen while it ran)."""
    peak = [rss_mb()]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb())
            time.sleep(0.01)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    start = time.perf_counter()
    try:
        out = fn()
    finally:
        elapsed = time.perf_counter() - start
        stop.set()
        t.join()
    return out, elapsed, max(peak[0], rss_mb())


def measure_cpu(fn: Callable[[], Any]) -> tuple[Any, float, float, float]:
    """:func:`measure` with the CPU time of this process (every thread) as well: (result,
    wall seconds, CPU seconds, peak RSS in MiB). On a loaded machine the wall time grows with
    the other processes' load; the CPU time much less."""
    start = time.process_time()
    out, wall, rss = measure(fn)
    return out, wall, time.process_time() - start, rss


def peer_venv(venv: Path, requirement: str, name: str, timeout: float = 1800) -> tuple[Path | None, str]:
    """The interpreter of a peer tool's own virtual environment at ``venv``, made on first use with
    ``pip install requirement`` (a peer never enters ppdm's environment); ``(None, why)`` when it
    cannot be made."""
    py = venv / "bin" / "python"
    if py.exists():
        return py, ""
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=600)
        subprocess.run([str(py), "-m", "pip", "install", "-q", requirement], check=True, capture_output=True,
                       timeout=timeout)
    except (subprocess.SubprocessError, OSError) as e:
        return None, f"{name}'s environment could not be made at {venv}: {type(e).__name__}"
    return py, ""
