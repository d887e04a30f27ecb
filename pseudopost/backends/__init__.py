"""Backends that run the pseudo posterior mechanism on data beyond one machine's memory.

:func:`is_dask_input` tells whether ``PseudoPosterior.fit`` should hand ``data`` (a Dask
DataFrame or a Parquet path) to the Dask backend, :func:`pseudopost.backends.dask.fit_dask`.
Dask itself is imported only when such data arrive (``pip install pseudopost[dask]``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fit_dask", "is_dask_input"]


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


def fit_dask(mech, data, **kwargs):
    """Run ``mech`` on Dask records; see :func:`pseudopost.backends.dask.fit_dask`."""
    from .dask import fit_dask as _fit

    return _fit(mech, data, **kwargs)
