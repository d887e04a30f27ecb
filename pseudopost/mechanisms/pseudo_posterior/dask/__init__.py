"""The pseudo posterior mechanism over records beyond one machine's memory (Dask).

``PseudoPosterior.fit`` hands a Dask DataFrame or a Parquet path to :func:`fit_dask`
(:mod:`.backend`); :mod:`.records` holds the canonical record blocks, :mod:`.passes` the passes
over them (statistics, accountant, weights). Dask itself is imported only when such data arrive
(``pip install pseudopost[dask]``).
"""

from pseudopost._io import is_dask_input

__all__ = ["fit_dask", "is_dask_input"]


def fit_dask(mech, data, **kwargs):
    """Run ``mech`` on Dask records; see :func:`pseudopost.mechanisms.pseudo_posterior.dask.backend.fit_dask`."""
    from pseudopost.mechanisms.pseudo_posterior.dask.backend import fit_dask as _fit

    return _fit(mech, data, **kwargs)
