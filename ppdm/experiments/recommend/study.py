"""The study file of ``ppdm recommend`` as a private file.

The study (an Optuna SQLite file) holds the seed of the search's hold-out split: with the
original table it tells who is in the release, so it is the owner's only, like the control
split and the private log. :func:`make_private` creates it readable and writable by its owner
alone before anything is written into it (SQLite gives its journal the file's own
permissions); :func:`discard_if_empty` removes the file a refused or failed run created before
any trial finished, so it does not block the next run (``--resume`` continues a study that
holds trials).
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

#: files SQLite may leave beside a database
_SIDE = ("-journal", "-wal", "-shm")


def make_private(path: str | Path) -> Path:
    """Create ``path`` empty with mode 600 when it does not exist, else set its mode to 600
    (where the system allows). An empty file counts as no study (:func:`ppdm.experiments.recommend`
    creates the study in it)."""
    p = Path(path)
    if not p.exists():
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
    try:
        os.chmod(p, 0o600)
    except OSError:
        pass
    return p


def finished_trials(path: str | Path) -> int:
    """How many trials of the study file finished (complete or failed); 0 for an empty file or
    one that holds no Optuna study."""
    p = Path(path)
    if not p.is_file() or p.stat().st_size == 0:
        return 0
    try:
        with closing(sqlite3.connect(f"file:{p}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT COUNT(*) FROM trials WHERE state IN ('COMPLETE', 'FAIL')").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row else 0


def discard_if_empty(path: str | Path) -> bool:
    """Remove the study file ``path`` (and SQLite's side files) when no trial of it finished;
    returns whether it was removed."""
    p = Path(path)
    if not p.exists() or finished_trials(p) > 0:
        return False
    for side in ("", *_SIDE):
        Path(f"{p}{side}").unlink(missing_ok=True)
    return True


__all__ = ["discard_if_empty", "finished_trials", "make_private"]
