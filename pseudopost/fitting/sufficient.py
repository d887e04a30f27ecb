r"""Sufficient-statistics fast path: fit the pseudo posterior from weighted sums, not records.

For exponential-family ready models the weighted log-likelihood
:math:`\ell_w(\theta) = \sum_i w_i \log p(x_i\mid\theta)` (range-restricted paper eq. 1, the
pseudo likelihood with weights :math:`w = \alpha^*`) depends on the data only through a few
weighted sums, so one gradient costs O(p^2) instead of O(n p). With the design
:math:`z_i = (1, z_{i1}, \dots, z_{ip})` (intercept column first) and
:math:`b = (\beta_0, \beta)`:

* Normal, :math:`y_i \sim N(z_i^\top b, \sigma^2)`; log-normal on :math:`y_i = \log x_i`:

  .. math::
      \ell_w = -S_w(\tfrac12\log 2\pi + \log\sigma)
               - \frac{S_{wyy} - 2 b^\top Z^\top W y + b^\top Z^\top W Z\, b}{2\sigma^2} + J,

  with :math:`S_w = \sum w_i`, :math:`S_{wyy} = \sum w_i y_i^2` and, for the log-normal, the
  Jacobian :math:`J = -\sum_i w_i \log x_i` (the density of x as given; 0 for the normal).
* Poisson, :math:`\log\mu_i = z_i^\top b`:

  .. math::
      \ell_w = b^\top Z^\top W y - \sum_{u} W_u\, e^{z_u^\top b} - \sum_i w_i \log y_i!,

  where u runs over the *unique* predictor rows of the design and :math:`W_u` is the sum of the
  weights of the records with that row. This compression is exact; it pays when the number of
  unique rows U is small (categorical or rounded predictors). Above :data:`MAX_UNIQUE_ROWS`,
  :func:`supports` says no and the full model is used.

Censoring (``censor_epsilon``) clips each record's contribution, which no sum preserves: there
is no fast path then. The accountant is unchanged: it still visits every record and every draw.

Blocks and order. Statistics are additive over records: :func:`block_statistics` returns them
for one block, and :func:`total_statistics` sums canonical blocks of :data:`STATS_BLOCK` records
in order (per key ``np.sum(np.stack(per_block), axis=0)``), so a chunked (Dask) computation over
the same blocks is bit-identical. The Poisson rows are the lexicographically sorted set of unique
predictor rows (``np.unique(..., axis=0)``) of *all* records, a function of the set of rows only:
computing it per chunk and merging (:func:`merge_rows`) gives the same array whatever the chunking
or record order, and every block's :math:`W_u` is a vector aligned to it (so blocks add).
Floating-point sums are taken in record order; reordering records changes them by rounding only.
Accuracy: :math:`S_{wyy} - 2b^\top Z^\top Wy + b^\top Z^\top WZb` cancels when residuals are
small against the outcome's mean (relative error about :math:`\epsilon_{64}\,\bar y^2/s^2`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import gammaln

from pseudopost.fitting.sampler import Sampler, make_sampler
from pseudopost.models.base import Prepared, SynthModel
from pseudopost.models.counts import PoissonRegression
from pseudopost.models.regression import LogNormalRegression, NormalRegression

__all__ = [
    "MAX_UNIQUE_ROWS",
    "STATS_BLOCK",
    "block_statistics",
    "design_rows",
    "merge_rows",
    "statistics_data",
    "statistics_model",
    "sufficient_sampler",
    "supports",
    "total_statistics",
    "unsupported_reason",
]

STATS_BLOCK = 65536
MAX_UNIQUE_ROWS = 4096
_TYPES = (NormalRegression, LogNormalRegression, PoissonRegression)
PREFIX = "suff_"


def unsupported_reason(model: SynthModel, prepared: Prepared | None = None) -> str | None:
    """Why ``model`` (on ``prepared``) has no sufficient-statistics fast path; None if it has."""
    if type(model) not in _TYPES:
        return (
            f"{type(model).__name__} has no sufficient statistics (only NormalRegression, "
            "LogNormalRegression and PoissonRegression do)"
        )
    if isinstance(model, PoissonRegression) and prepared is not None:
        u = design_rows(model, prepared.arrays).shape[0]
        if u > MAX_UNIQUE_ROWS:
            return (
                f"the Poisson design has {u} unique predictor rows > {MAX_UNIQUE_ROWS}: "
                "compressing it would not pay"
            )
    return None


def supports(model: SynthModel, prepared: Prepared | None = None) -> bool:
    """True when ``model`` can be fitted from sufficient statistics (see the module docstring).

    Without ``prepared`` this is the model-type check only; with it, a Poisson design must
    also have at most :data:`MAX_UNIQUE_ROWS` unique predictor rows.
    """
    return unsupported_reason(model, prepared) is None


def _check(model: SynthModel) -> None:
    if type(model) not in _TYPES:
        raise TypeError(unsupported_reason(model) + ".")


def _predictors(model, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    cols = [np.asarray(arrays[p], dtype=np.float64) for p in model.predictors]
    n = len(arrays[model.outcome])
    return np.column_stack(cols) if cols else np.zeros((n, 0))


def design_rows(model: PoissonRegression, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    """Sorted unique predictor rows (U x p) of the records in ``arrays`` (order-invariant)."""
    z = _predictors(model, arrays)
    if z.shape[1] == 0:
        return np.zeros((1, 0))
    return np.unique(z + 0.0, axis=0)  # + 0.0 turns -0.0 into 0.0


def merge_rows(*row_sets: np.ndarray) -> np.ndarray:
    """The sorted union of row sets from :func:`design_rows` on chunks (equal to the whole's)."""
    rows = np.concatenate(row_sets, axis=0)
    return rows[:1] if rows.shape[1] == 0 else np.unique(rows, axis=0)


def _row_index(z: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Position of each row of ``z`` in the sorted unique ``rows`` (error if one is missing)."""
    if rows.shape[1] == 0:
        return np.zeros(z.shape[0], dtype=np.intp)
    uniq, inverse = np.unique(z + 0.0, axis=0, return_inverse=True)
    dtype = [(f"f{j}", np.float64) for j in range(rows.shape[1])]
    key = np.ascontiguousarray(rows).view(dtype).ravel()
    pos = np.searchsorted(key, np.ascontiguousarray(uniq).view(dtype).ravel())
    pos = np.minimum(pos, len(rows) - 1)
    if not np.array_equal(rows[pos], uniq):
        raise ValueError("'rows' does not contain every predictor row of the block.")
    return pos[inverse.ravel()]


def block_statistics(
    model: SynthModel,
    arrays: Mapping[str, np.ndarray],
    weights: np.ndarray,
    *,
    rows: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Weighted sufficient statistics of one block of records (additive over blocks).

    Parameters
    ----------
    model
        A supported ready model (:func:`supports`).
    arrays
        The block's columns by name, as in :attr:`Prepared.arrays`.
    weights
        The block's weights :math:`w_i \\ge 0` (:math:`\\alpha^*`).
    rows
        Poisson only: the sorted unique predictor rows of *all* records (:func:`design_rows`,
        or :func:`merge_rows` of per-chunk ones); ``W_u`` is aligned to them. Required for
        Poisson, ignored otherwise.

    Returns
    -------
    dict
        Normal / log-normal: ``sw``, ``swy``, ``swyy``, ``ztwz`` ((p+1) x (p+1)), ``ztwy``
        (p+1), ``const`` (the Jacobian :math:`-\\sum w\\log x`; 0 for the normal). Poisson:
        ``sw``, ``ztwy``, ``const`` (:math:`-\\sum w \\log y!`), ``row_weights`` (U).
    """
    _check(model)
    w = np.asarray(weights, dtype=np.float64)
    x = np.asarray(arrays[model.outcome], dtype=np.float64)
    if w.shape != x.shape:
        raise ValueError(f"'weights' must have shape {x.shape}, one per record; got {w.shape}.")
    bad = ~(np.isfinite(w) & (w >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"'weights' must be finite and >= 0; record {i} has {w[i]}.")
    z = _predictors(model, arrays)
    design = np.column_stack([np.ones(len(x)), z])
    if isinstance(model, PoissonRegression):
        if rows is None:
            raise ValueError(
                "Poisson sufficient statistics need 'rows', the unique predictor rows of all "
                "records (design_rows(model, arrays) or merge_rows over chunks)."
            )
        idx = _row_index(z, rows)
        return {
            "sw": np.asarray(w.sum()),
            "ztwy": design.T @ (w * x),
            "const": np.asarray(-(w @ gammaln(x + 1.0))),
            "row_weights": np.bincount(idx, weights=w, minlength=len(rows)).astype(np.float64),
        }
    y = np.log(x) if isinstance(model, LogNormalRegression) else x
    wy = w * y
    return {
        "sw": np.asarray(w.sum()),
        "swy": np.asarray(wy.sum()),
        "swyy": np.asarray(wy @ y),
        "ztwz": (design * w[:, None]).T @ design,
        "ztwy": design.T @ wy,
        "const": np.asarray(-wy.sum() if isinstance(model, LogNormalRegression) else 0.0),
    }


def total_statistics(
    model: SynthModel, arrays: Mapping[str, np.ndarray], weights: np.ndarray
) -> dict[str, np.ndarray]:
    """Statistics of all records: the ordered sum over canonical blocks of :data:`STATS_BLOCK`.

    For Poisson the result also carries ``rows`` (the unique predictor rows, not summed).
    """
    _check(model)
    w = np.asarray(weights, dtype=np.float64)
    n = len(arrays[model.outcome])
    if w.shape != (n,):
        raise ValueError(f"'weights' must have shape ({n},), one per record; got {w.shape}.")
    rows = design_rows(model, arrays) if isinstance(model, PoissonRegression) else None
    per_block = [
        block_statistics(
            model,
            {k: np.asarray(v)[i : i + STATS_BLOCK] for k, v in arrays.items()},
            w[i : i + STATS_BLOCK],
            rows=rows,
        )
        for i in range(0, n, STATS_BLOCK)
    ]
    out = {k: np.sum(np.stack([b[k] for b in per_block]), axis=0) for k in per_block[0]}
    if rows is not None:
        out["rows"] = rows
    return out


def _coefficients(model: SynthModel, intercept_scale: float):
    """Declare ``intercept`` and ``beta`` (the ready models' priors) and return b = (b0, beta)."""
    intercept = pm.Normal("intercept", 0.0, intercept_scale)
    if not model.predictors:
        return intercept[None]
    beta = pm.Normal("beta", 0.0, model.prior_scale, dims="predictor")
    return pt.concatenate([intercept[None], beta])


def statistics_model(model: SynthModel, stats: Mapping[str, np.ndarray]) -> pm.Model:
    """The PyMC model of the weighted posterior given the statistics (in ``pm.Data``).

    Same free variables, priors and dims as ``model.build(prepared)``: ``intercept``, ``beta``
    (``predictor``) and, for normal/log-normal, ``sigma``. The weighted log-likelihood is one
    ``pm.Potential`` (``weighted_loglik``); its structure does not depend on n, so one compiled
    model serves every data size and every set of weights.
    """
    _check(model)
    with model.model_context() as m:
        data = {k: pm.Data(PREFIX + k, v) for k, v in _data_values(model, stats).items()}
        if isinstance(model, PoissonRegression):
            b = _coefficients(model, 2.0 * model.prior_scale)
            eta = b[0] + (data["rows"] @ b[1:] if model.predictors else 0.0)
            loglik = (
                pt.dot(data["ztwy"], b) - pt.sum(data["row_weights"] * pt.exp(eta)) + data["const"]
            )
        else:
            b = _coefficients(model, model.prior_scale)
            sigma = pm.HalfNormal("sigma", model.prior_scale)
            quad = data["swyy"] - 2.0 * pt.dot(data["ztwy"], b) + pt.dot(b, data["ztwz"] @ b)
            loglik = (
                -data["sw"] * (0.5 * np.log(2.0 * np.pi) + pt.log(sigma))
                - quad / (2.0 * sigma**2)
                + data["const"]
            )
        pm.Potential("weighted_loglik", loglik)
    return m


_USED = {
    "poisson": ("ztwy", "const", "row_weights", "rows"),
    "gaussian": ("sw", "swyy", "ztwz", "ztwy", "const"),
}


def _data_values(model: SynthModel, stats: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The statistics the model's graph uses, as float64 arrays (by statistic name)."""
    used = _USED["poisson" if isinstance(model, PoissonRegression) else "gaussian"]
    missing = [k for k in used if k not in stats]
    if missing:
        raise ValueError(f"The statistics lack {missing} (expected keys {list(used)}).")
    return {k: np.asarray(stats[k], dtype=np.float64) for k in used}


def statistics_data(model: SynthModel, stats: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The data of the statistics model (:func:`statistics_model`) for the statistics ``stats``
    (as :func:`total_statistics` returns them): what its sampler's ``sample`` takes."""
    return {PREFIX + k: v for k, v in _data_values(model, stats).items()}


def sufficient_sampler(
    model: SynthModel, stats: Mapping[str, np.ndarray], kind: str = "nutpie"
) -> Sampler:
    """The sampler of the weighted posterior of a supported model given its statistics: a
    :class:`~pseudopost.fitting.sampler.Sampler` of :func:`statistics_model`, whose data are
    :func:`statistics_data` (the weights enter through the statistics).

    With ``kind="nutpie"`` (the default) nutpie evaluates the statistics model's log density
    written out in NumPy (:class:`~pseudopost.fitting.statistics_density.StatisticsDensity`):
    nothing is compiled, on a new machine or an old one, and every fit passes its statistics,
    whatever n, the weights or the data are (for Poisson the number of unique rows may change
    between fits). ``"nutpie-jax"`` and ``"pymc"`` compile the PyMC model of
    :func:`statistics_model`, the reference the written-out density is tested against.

    Parameters
    ----------
    model
        A supported ready model.
    stats
        Statistics of the shape to build for (e.g. :func:`total_statistics` with unit weights).
    kind
        ``"nutpie"``, ``"nutpie-jax"`` or ``"pymc"`` (:func:`~pseudopost.fitting.sampler.make_sampler`).
    """
    from pseudopost.fitting.statistics_density import StatisticsDensity

    pymc_model = statistics_model(model, stats)
    compiled = None
    if kind == "nutpie":
        compiled = StatisticsDensity(model, PREFIX).compiled(statistics_data(model, stats))
    return make_sampler(pymc_model, kind, compiled=compiled)
