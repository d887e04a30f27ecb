"""Files in and out.

Outputs are written whole or not at all: write to a temporary name beside the target, flush and
fsync, then rename (atomic on POSIX within one file system), and fsync the folder so the rename
itself is durable (:func:`fsync_dir`). :func:`is_dask_input` tells whether input data are records
held out of memory (a Dask DataFrame or Parquet files)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

__all__ = ["atomic_write", "fsync_dir", "is_dask_input", "write_csv", "write_json"]


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
        fsync_dir(target.parent)  # make the rename itself durable
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return target


def fsync_dir(path: str | os.PathLike) -> None:
    """Flush a folder's entries (a rename into it, a new file) to disk."""
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


def is_dask_input(data: object) -> bool:
    """True for a Dask DataFrame or a path to a Parquet file or a folder of Parquet files."""
    if isinstance(data, (str, os.PathLike)):
        p = Path(data)
        if p.suffix.lower() in (".parquet", ".pq"):
            return True
        return p.is_dir() and (any(p.glob("*.parquet")) or any(p.glob("*.pq")))
    module = type(data).__module__ or ""
    if not module.startswith("dask"):
        return False
    import dask.dataframe as dd

    return isinstance(data, dd.DataFrame)
