"""Files of a release: digests, the hidden staging folder, JSON-safe values, progress lines.

A release is built whole in a staging folder ``.NAME.partial-PID`` beside its output folder and
renamed into place only after its budget is committed (:mod:`pseudopost.release.run`); every
file in it is written atomically (:mod:`pseudopost._io`). A staging folder left by a process
that died is removed by the next release to the same place.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["jsonable", "records", "say", "sha256_file", "staging_dir"]


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def say(message: str) -> None:
    """A progress line on stderr (``pseudopost: ...``)."""
    print(f"pseudopost: {message}", file=sys.stderr, flush=True)


def staging_dir(out: Path) -> Path:
    """A fresh hidden staging folder beside ``out``; stale ones of dead processes are removed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{out.name}.partial-"
    for old in out.parent.glob(prefix + "*"):
        pid = old.name[len(prefix) :]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    stage = out.parent / f"{prefix}{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    return stage


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def jsonable(v: Any) -> Any:
    """``v`` with NumPy scalars and arrays as Python values, tuples as lists, dict keys as
    strings and non-finite floats as None (valid JSON)."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, np.generic):
        return jsonable(v.item())
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows as JSON-safe dicts (NaN as null, full float precision)."""
    return jsonable(frame.to_dict(orient="records"))
