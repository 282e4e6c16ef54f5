"""Atomic outputs: a file is written under a temporary name beside its target and renamed
into place only when complete, so a failed or interrupted run never leaves a partial output.

Every temporary file or folder in use is recorded in a registry (:func:`hold_temporary`) so
that a run stopped by a signal can remove them all (:func:`remove_temporaries`; the command
line does so on SIGTERM and SIGINT). The registry holds temporary names only, never a
finished output, so removing them cannot destroy a result.

This module sits below :mod:`ppdm.data.io` and :mod:`ppdm.data.schema`, which both write
files through it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ppdm.errors import PPDMError

_LIVE: set[Path] = set()
_LOCK = threading.Lock()


def hold_temporary(path: str | Path) -> Path:
    """Record ``path`` (a temporary file or folder) as in use until :func:`release_temporary`."""
    p = Path(path)
    with _LOCK:
        _LIVE.add(p)
    return p


def release_temporary(path: str | Path) -> None:
    """Forget ``path``: it was renamed into place or removed."""
    with _LOCK:
        _LIVE.discard(Path(path))


def live_temporaries() -> list[Path]:
    """The temporary files and folders currently in use."""
    with _LOCK:
        return sorted(_LIVE)


def remove_temporaries() -> list[Path]:
    """Remove every temporary file and folder in use (after a signal); returns those removed."""
    with _LOCK:
        held = sorted(_LIVE)
        _LIVE.clear()
    gone = []
    for p in held:
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            gone.append(p)
        except OSError:
            pass
    return gone


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place on success only.

    A folder that cannot be written is reported naming ``path`` (the output), never the
    temporary file.
    """
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise PPDMError(f"output folder {str(p.parent)!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    except OSError as e:
        raise PPDMError(f"cannot write output {str(p)!r}: {e.strerror or type(e).__name__}") from None
    tmp_path = hold_temporary(tmp)
    try:
        os.close(fd)
        # mkstemp creates 0600 files; give outputs the usual mode (0666 less the umask)
        os.chmod(tmp, 0o666 & ~_umask())
        yield tmp_path
        try:
            os.replace(tmp_path, p)
        except OSError as e:
            raise PPDMError(f"cannot write output {str(p)!r}: {e.strerror or type(e).__name__}") from None
    finally:
        release_temporary(tmp_path)
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write a text file atomically."""
    p = Path(path)
    with atomic_path(p) as tmp:
        tmp.write_text(text)
    return p
