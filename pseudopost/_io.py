"""Output files written whole or not at all: write to a temporary name beside the target, flush
and fsync, then rename (atomic on POSIX within one file system)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

__all__ = ["atomic_write", "write_csv", "write_json"]


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path`` only if it succeeded."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        os.chmod(tmp_path, 0o644)  # mkstemp makes 0600; outputs are meant to be read
        with open(tmp_path, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, target)
        _fsync_dir(target.parent)  # make the rename itself durable
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return target


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_csv(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """``frame`` as CSV (no index), atomically."""
    return atomic_write(path, lambda p: frame.to_csv(p, index=False))


def write_json(obj: object, path: str | os.PathLike) -> Path:
    """``obj`` as indented JSON, atomically."""
    return atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=2, sort_keys=True)))
